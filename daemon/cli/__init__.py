"""The thin command line over the rooms above."""
