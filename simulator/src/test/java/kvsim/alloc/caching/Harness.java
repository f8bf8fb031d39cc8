package kvsim.alloc.caching;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.AllocatorListener;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;

/** Drives a caching model in tests: every call checks the invariants and records device events. */
final class Harness implements AllocatorListener {
  static final long MiB = 1L << 20;

  final CachingAllocator model;
  final List<String> events = new ArrayList<>();

  Harness(String conf, long regionBytes) {
    this(conf, TieBreak.ADDRESS, regionBytes);
  }

  Harness(String conf, TieBreak tieBreak, long regionBytes) {
    model = new CachingAllocator(TorchAllocConf.parse(conf), tieBreak, new Region("all", 0, regionBytes));
    model.setListener(this);
  }

  /** Allocates on stream 0 and returns the outcome. */
  AllocOutcome.Allocated alloc(long bytes) {
    return alloc(bytes, 0);
  }

  AllocOutcome.Allocated alloc(long bytes, long stream) {
    AllocOutcome o = model.allocate(new AllocRequest(bytes, Tag.TEMP, false, stream));
    model.checkInvariants();
    assertTrue(o.succeeded(), () -> "expected " + bytes + " B to be served, got " + o);
    return (AllocOutcome.Allocated) o;
  }

  AllocOutcome tryAlloc(long bytes) {
    AllocOutcome o = model.allocate(new AllocRequest(bytes, Tag.TEMP, false, 0));
    model.checkInvariants();
    return o;
  }

  void free(AllocOutcome.Allocated a) {
    model.free(a.handle());
    model.checkInvariants();
  }

  static long addr(AllocOutcome.Allocated a) {
    return a.extents().offsetBytes(0);
  }

  long stat(String name) {
    Long v = model.extraMetrics().get(name);
    if (v == null) {
      throw new AssertionError("no stat " + name);
    }
    return v;
  }

  @Override
  public void segmentAlloc(long addressBytes, long sizeBytes, long stream) {
    events.add("segment_alloc " + addressBytes / MiB + " " + sizeBytes / MiB);
  }

  @Override
  public void segmentFree(long addressBytes, long sizeBytes, long stream) {
    events.add("segment_free " + addressBytes / MiB + " " + sizeBytes / MiB);
  }

  @Override
  public void segmentMap(long addressBytes, long sizeBytes, long stream) {
    events.add("segment_map " + addressBytes / MiB + " " + sizeBytes / MiB);
  }

  @Override
  public void segmentUnmap(long addressBytes, long sizeBytes, long stream) {
    events.add("segment_unmap " + addressBytes / MiB + " " + sizeBytes / MiB);
  }
}
