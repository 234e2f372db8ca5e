"""Interleaved rounds, shared by the bench runners: each round starts with another arm, so that
drift over a run hits every arm alike, a figure is the median over the rounds, and the load
around the arms is read from the CPU times."""
import statistics


def rotated(arms, round_index):
    """The arms in the order of round `round_index`: shifted by one more each round."""
    shift = round_index % len(arms)
    return arms[shift:] + arms[:shift]


def median_of(values):
    """The median of the values that are not None; None when there is none."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def cpu_times():
    """(busy, steal, total) clock ticks of all CPUs, from /proc/stat."""
    with open("/proc/stat") as stat:
        for line in stat:
            if line.startswith("cpu "):
                values = [int(v) for v in line.split()[1:]]
                idle = values[3] + values[4]
                steal = values[7] if len(values) > 7 else 0
                total = sum(values[:8])
                return total - idle - steal, steal, total
    return 0, 0, 0
