"""The regression family: y = f*(x) + ε with known noise, the benchmark of the paper. Its
instances are built by the benchmark's own stages (sample, posterior) and opened as
:class:`postrisk.tasks.task.Task`."""

from postrisk.grid.study import TaskFamily

FAMILY = TaskFamily(
    name="regression",
    title="Regression: y = f*(x) + ε with known heteroscedastic noise",
    task="postrisk.tasks.task:Task",
)
