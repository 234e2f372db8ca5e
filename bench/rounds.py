"""Interleaved rounds, shared by the bench runners: each round starts with another arm, so that
drift over a run hits every arm alike, and a figure is the median over the rounds."""
import statistics


def rotated(arms, round_index):
    """The arms in the order of round `round_index`: shifted by one more each round."""
    shift = round_index % len(arms)
    return arms[shift:] + arms[:shift]


def median_of(values):
    """The median of the values that are not None; None when there is none."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
