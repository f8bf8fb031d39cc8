"""Checks that snapshots written by `kvsim replay --torch-snapshot` load in PyTorch's own memory_viz.

Debian's python3-torch (1.13) ships torch.cuda._memory_viz with the segment, memory and stats views;
they read the list of segments (the 1.13 snapshot held only that list; newer snapshots, which kvsim
writes, keep it under "segments", beside "device_traces"). Its trace view needs PyTorch 2.1 or newer
and is not checked here. The flamegraph views are asked for their folded-stack text (the default
formatter would download flamegraph.pl), and every byte of every segment must be accounted for.

Usage: python3 memory-viz-check.py SNAPSHOT.pickle ...
"""
import pickle
import sys

from torch.cuda import _memory_viz


def check(path):
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    assert isinstance(snapshot, dict) and "segments" in snapshot and "device_traces" in snapshot, f"{path}: not a snapshot dict"
    segments = snapshot["segments"]
    stats = _memory_viz.stats(segments)  # asserts each segment's blocks add up to its total_size
    total = sum(seg["total_size"] for seg in segments)
    assert stats["total_size"].value == total, f"{path}: stats total {stats['total_size']} != {total}"
    for view in (_memory_viz.segments, _memory_viz.memory):
        folded = view(segments, format_flamegraph=lambda text: text)
        counted = sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines() if line)
        assert counted == total, f"{path}: {view.__name__} accounts for {counted} of {total} bytes"
    entries = sum(len(t) for t in snapshot["device_traces"])
    print(f"memory_viz: {path}: {len(segments)} segments, {total} bytes, segments and memory views read; {entries} trace entries (trace view not checked: needs PyTorch >= 2.1)")


for p in sys.argv[1:]:
    check(p)
