"""The paired multi-seed study: its settings and runs (:mod:`.runs`), their statistics
(:mod:`.stats`), the report and verdict (:mod:`.report`), and the Ray executor
(:mod:`.ray_runs`). Runs go through the shared worker pool of :mod:`..runner`."""
