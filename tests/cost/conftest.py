"""Print the development set's predictions (MODEL.md §C.6) at the end of a run that checked them."""


def pytest_terminal_summary(terminalreporter):
    from . import test_predicted_step

    if not test_predicted_step.TABLE:
        return
    write = terminalreporter.write_line
    write("predicted step time on the development set (scaling_widgets/data/dev_runs.json):")
    write(f"  {'run':<26} {'measured s':>11} {'predicted s':>12} {'error':>7}")
    for rid, measured, predicted, error in test_predicted_step.TABLE:
        write(f"  {rid:<26} {measured:>11.4g} {predicted:>12.4g} {error:>+7.1%}")
