package kvsim.gpu.replay;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.gpu.device.DeviceOutOfMemoryException;
import kvsim.gpu.device.GpuDevice;
import kvsim.gpu.plan.Plan;
import kvsim.gpu.plan.PlanOp;

/**
 * Runs a {@link Plan} on a {@link GpuDevice} (README, "gpu replay"): every device call timed with
 * {@link System#nanoTime()}, and at each {@code PROBE} the device's own fragmentation measured.
 *
 * <p>Note [Device probes]: a probe reads the free memory ({@link GpuDevice#freeBytes()}) and finds
 * the largest allocation that still succeeds by bisection over multiples of {@code
 * probeGranularityBytes}, each step an allocate-and-free, at most {@code maxProbeSteps} steps; its
 * fragmentation is {@code 1 − largest / free}, the simulator's external fragmentation measured on
 * the device. The probe's own calls are not timed as replay calls.
 *
 * <p>Note [Device refusals]: a refused {@code ALLOC} or {@code CREATE_PHYSICAL} is a result, not an
 * error: it is counted ({@code oom_count}, as the simulator counts its refusals), and what depends
 * on it (the allocation's {@code FREE}, the handle's {@code MAP}, {@code UNMAP} and {@code
 * RELEASE_PHYSICAL}) is skipped and counted ({@code skipped_count}). A copy touching unmapped memory
 * of such a handle is skipped too. Everything else the device throws is a failure.
 */
public final class Executor {
  private final GpuDevice device;
  private final long probeGranularityBytes;
  private final int maxProbeSteps;

  /** One timed device call: the plan op's index, its kind and size, and its wall time; refused when the device said out of memory. */
  public record Call(int opIndex, PlanOp.Kind kind, long event, long sizeBytes, long nanos, boolean refused) {}

  /** One fragmentation probe: after {@code event}, the device's free bytes and its largest allocatable block. */
  public record Probe(long event, long freeBytes, long largestBytes) {
    /** Returns {@code 1 − largest / free}, 0 when nothing is free. */
    public double fragmentation() {
      return freeBytes <= 0 ? 0 : Math.max(0, 1 - (double) largestBytes / freeBytes);
    }
  }

  /** What a run of a plan measured. */
  public record Result(List<Call> calls, List<Probe> probes, long oomCount, long skippedCount, long wallNanos) {
    public Result {
      calls = List.copyOf(calls);
      probes = List.copyOf(probes);
    }
  }

  /**
   * @param probeGranularityBytes the step of a probe's bisection (e.g. 2 MiB)
   * @param maxProbeSteps the most allocate-and-free steps of one probe
   */
  public Executor(GpuDevice device, long probeGranularityBytes, int maxProbeSteps) {
    if (probeGranularityBytes <= 0 || maxProbeSteps <= 0) {
      throw new IllegalArgumentException("probe granularity and steps must be positive");
    }
    this.device = device;
    this.probeGranularityBytes = probeGranularityBytes;
    this.maxProbeSteps = maxProbeSteps;
  }

  /** Runs {@code plan}. */
  public Result run(Plan plan) {
    Map<Long, Long> addresses = new HashMap<>();
    Map<Long, Long> handles = new HashMap<>();
    Set<Long> refusedAllocs = new HashSet<>();
    Set<Long> refusedHandles = new HashSet<>();
    Map<Long, Long> handleAtOffset = new HashMap<>();
    List<Call> calls = new ArrayList<>();
    List<Probe> probes = new ArrayList<>();
    long oom = 0;
    long skipped = 0;
    long reservation = -1;
    long started = System.nanoTime();
    List<PlanOp> ops = plan.ops();
    for (int i = 0; i < ops.size(); i++) {
      PlanOp op = ops.get(i);
      long t0 = System.nanoTime();
      boolean refused = false;
      switch (op.kind()) {
        case ALLOC -> {
          try {
            addresses.put(op.id(), device.allocate(op.sizeBytes()));
          } catch (DeviceOutOfMemoryException e) {
            refused = true;
            refusedAllocs.add(op.id());
          }
        }
        case FREE -> {
          if (refusedAllocs.remove(op.id())) {
            skipped++;
            continue;
          }
          device.free(require(addresses.remove(op.id()), op, i));
        }
        case RESERVE -> reservation = device.reserve(op.sizeBytes());
        case RELEASE -> device.release(reservation, op.sizeBytes());
        case CREATE_PHYSICAL -> {
          try {
            handles.put(op.id(), device.createPhysical(op.sizeBytes()));
          } catch (DeviceOutOfMemoryException e) {
            refused = true;
            refusedHandles.add(op.id());
          }
        }
        case RELEASE_PHYSICAL -> {
          if (refusedHandles.remove(op.id())) {
            skipped++;
            continue;
          }
          device.releasePhysical(require(handles.remove(op.id()), op, i));
        }
        case MAP -> {
          if (refusedHandles.contains(op.id())) {
            skipped++;
            continue;
          }
          device.map(reservation + op.offsetBytes(), op.sizeBytes(), require(handles.get(op.id()), op, i));
          handleAtOffset.put(op.offsetBytes(), op.id());
        }
        case UNMAP -> {
          Long handle = handleAtOffset.remove(op.offsetBytes());
          if (handle == null) {
            skipped++;
            continue;
          }
          device.unmap(reservation + op.offsetBytes(), op.sizeBytes());
        }
        case COPY_D2D -> device.copyDeviceToDevice(base(addresses, reservation) + op.offsetBytes(), base(addresses, reservation) + op.sourceOffsetBytes(), op.sizeBytes());
        case COPY_H2D -> device.copyHostToDevice(base(addresses, reservation) + op.offsetBytes(), op.sizeBytes());
        case COPY_D2H -> device.copyDeviceToHost(base(addresses, reservation) + op.offsetBytes(), op.sizeBytes());
        case PROBE -> {
          probes.add(probe(op.event()));
          continue;
        }
      }
      long nanos = System.nanoTime() - t0;
      if (refused) {
        oom++;
      }
      calls.add(new Call(i, op.kind(), op.event(), op.sizeBytes(), nanos, refused));
    }
    device.synchronize();
    return new Result(calls, probes, oom, skipped, System.nanoTime() - started);
  }

  /** Copies address the arena (allocation 0) or, without one, the reservation. */
  private static long base(Map<Long, Long> addresses, long reservation) {
    Long arena = addresses.get(0L);
    return arena != null ? arena : reservation;
  }

  private static long require(Long value, PlanOp op, int index) {
    if (value == null) {
      throw new IllegalStateException("plan op " + index + " (" + op.toJsonLine() + ") acts on something the plan never made");
    }
    return value;
  }

  /** Note [Device probes]. */
  Probe probe(long event) {
    long free = device.freeBytes();
    long lo = 0; // in granules: known to succeed (0 trivially)
    long hi = free / probeGranularityBytes; // upper bound in granules
    int steps = 0;
    if (hi > 0 && tryAllocate(hi * probeGranularityBytes)) {
      lo = hi;
    } else {
      steps++;
      while (lo + 1 < hi && steps < maxProbeSteps) {
        long mid = lo + (hi - lo) / 2;
        steps++;
        if (tryAllocate(mid * probeGranularityBytes)) {
          lo = mid;
        } else {
          hi = mid;
        }
      }
    }
    return new Probe(event, free, lo * probeGranularityBytes);
  }

  private boolean tryAllocate(long sizeBytes) {
    try {
      long address = device.allocate(sizeBytes);
      device.free(address);
      return true;
    } catch (DeviceOutOfMemoryException e) {
      return false;
    }
  }
}
