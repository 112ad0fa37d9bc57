"""The cluster: the chip, how a layout's groups sit on its slice (a TPU torus, GPU nodes), and
whether a layout can run there."""
