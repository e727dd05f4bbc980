"""The long-running process: threads, scheduler, signals, health, the service files, status."""
