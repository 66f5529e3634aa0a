"""The control plane: the commands that change jobs, the lifecycle of their runs, and the scheduling loop."""
