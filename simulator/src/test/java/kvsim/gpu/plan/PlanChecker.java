package kvsim.gpu.plan;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Checks a plan's ranges without a device (the plan property of issue 28): allocations are made
 * once and freed once; physical memory is created once, mapped at most once at a time, unmapped
 * before it is released; mappings lie inside the one reservation, never overlap a live mapping, and
 * are unmapped whole; at the end nothing is live. Returns null when the plan is sound, else what
 * is wrong, naming the op.
 */
final class PlanChecker {
  private PlanChecker() {}

  static String check(Plan plan) {
    Set<Long> allocations = new HashSet<>();
    Map<Long, Long> physical = new HashMap<>(); // handle → size
    Set<Long> mappedHandles = new HashSet<>();
    TreeMap<Long, long[]> mappings = new TreeMap<>(); // offset → {end, handle}
    long reservation = -1;
    List<PlanOp> ops = plan.ops();
    for (int i = 0; i < ops.size(); i++) {
      PlanOp op = ops.get(i);
      String at = "op " + i + " " + op.toJsonLine() + ": ";
      switch (op.kind()) {
        case ALLOC -> {
          if (op.sizeBytes() <= 0 || !allocations.add(op.id())) {
            return at + "allocates a live id or nothing";
          }
        }
        case FREE -> {
          if (!allocations.remove(op.id())) {
            return at + "frees what is not live";
          }
        }
        case RESERVE -> {
          if (reservation >= 0 || op.sizeBytes() <= 0 || (plan.granularityBytes() > 0 && op.sizeBytes() % plan.granularityBytes() != 0)) {
            return at + "a second or empty or unaligned reservation";
          }
          reservation = op.sizeBytes();
        }
        case RELEASE -> {
          if (reservation != op.sizeBytes() || !mappings.isEmpty()) {
            return at + "releases what is not the reservation, or with mappings in it";
          }
          reservation = -2;
        }
        case CREATE_PHYSICAL -> {
          if (physical.put(op.id(), op.sizeBytes()) != null || op.sizeBytes() % plan.granularityBytes() != 0) {
            return at + "creates a live handle or an unaligned size";
          }
        }
        case RELEASE_PHYSICAL -> {
          if (physical.remove(op.id()) == null || mappedHandles.contains(op.id())) {
            return at + "releases a handle that is not live or still mapped";
          }
        }
        case MAP -> {
          Long size = physical.get(op.id());
          if (size == null || size != op.sizeBytes() || !mappedHandles.add(op.id())) {
            return at + "maps a handle that is not live, of another size, or already mapped";
          }
          if (reservation < 0 || op.offsetBytes() < 0 || op.offsetBytes() + op.sizeBytes() > reservation
              || op.offsetBytes() % plan.granularityBytes() != 0) {
            return at + "maps outside the reservation or unaligned";
          }
          var before = mappings.floorEntry(op.offsetBytes() + op.sizeBytes() - 1);
          if (before != null && before.getValue()[0] > op.offsetBytes()) {
            return at + "overlaps the live mapping at " + before.getKey();
          }
          mappings.put(op.offsetBytes(), new long[] {op.offsetBytes() + op.sizeBytes(), op.id()});
        }
        case UNMAP -> {
          long[] m = mappings.remove(op.offsetBytes());
          if (m == null || m[0] - op.offsetBytes() != op.sizeBytes()) {
            return at + "unmaps what is not one whole live mapping";
          }
          mappedHandles.remove(m[1]);
        }
        case COPY_D2D, COPY_H2D, COPY_D2H, PROBE -> {}
      }
    }
    if (!allocations.isEmpty() || !physical.isEmpty() || !mappings.isEmpty() || reservation >= 0) {
      return "at the end still live: " + allocations.size() + " allocations, " + physical.size() + " handles, "
          + mappings.size() + " mappings" + (reservation >= 0 ? ", the reservation" : "");
    }
    return null;
  }
}
