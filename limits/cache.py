"""The per-process snapshot of every limit and quarantine (limits/selectors.py), under one epoch that
every write moves (limits/services.py): each process applies a change on its next request, with no query
in the steady state (the epochs are pushed to every process: core/epoch_watch.py)."""

from core.epochs import EpochCache

LIMITS = EpochCache("limits", max_entries=1)
