/**
 * Interop with PyTorch memory snapshots ({@code torch.cuda.memory._dump_snapshot()} pickles), in
 * the format written by PyTorch's {@code torch/csrc/cuda/memory_snapshot.cpp} (pytorch/pytorch
 * at @0006736) and {@code torch/cuda/memory.py} (@00b65a0), as of 2026. What the caching model does
 * with them is described in README, "PyTorch's caching allocator and its memory snapshots".
 *
 * <ul>
 *   <li>Reading: {@link kvsim.torch.PickleScanner} refuses pickles that can run code, then {@link
 *       kvsim.torch.SnapshotReader} builds a {@link kvsim.torch.TorchSnapshot}.
 *   <li>{@link kvsim.torch.ReplayVerifier}: rebuilds the state at the start of a recording and
 *       replays it on the caching model, comparing every decision ({@code kvsim torch-replay}).
 *   <li>{@link kvsim.torch.SnapshotInspector}: the fragmentation picture ({@code kvsim
 *       torch-inspect}); {@link kvsim.torch.SnapshotImporter}: a snapshot's trace as an L1 trace
 *       ({@code kvsim import torch-snapshot}).
 *   <li>Writing: {@link kvsim.torch.SnapshotRecorder} records any model's run as a snapshot that
 *       {@code memory_viz} opens, written by {@link kvsim.torch.PickleWriter} ({@code kvsim replay
 *       --torch-snapshot}).
 * </ul>
 */
package kvsim.torch;
