"""The transformer: its shape, its parameters and FLOPs, one layer's compute and traffic under
each strategy and where it turns compute-bound, its experts, context parallelism, and the
activations it keeps."""
