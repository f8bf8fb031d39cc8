package kvsim.gpu.plan;

import java.util.Locale;

/**
 * One device operation of a GPU replay plan (README, "gpu replay"), with the trace event it comes
 * from. Its fields mean, per kind:
 *
 * <ul>
 *   <li>{@code ALLOC id size}: {@code cuMemAlloc} of {@code sizeBytes}; {@code id} names the result
 *       for the later {@code FREE} (the trace's allocation id in raw mode; 0 for an arena, 1, 2, …
 *       for the caching allocator's segments).
 *   <li>{@code FREE id}: {@code cuMemFree} of the allocation {@code id}.
 *   <li>{@code RESERVE size} / {@code RELEASE size}: the plan's one virtual address range.
 *   <li>{@code CREATE_PHYSICAL id size} / {@code RELEASE_PHYSICAL id}: physical memory {@code id}.
 *   <li>{@code MAP id offset size} / {@code UNMAP offset size}: physical memory {@code id} mapped at
 *       {@code offsetBytes} into the reservation, and unmapped.
 *   <li>{@code COPY_D2D offset source size}: within the arena, {@code sizeBytes} from {@code
 *       sourceOffsetBytes} to {@code offsetBytes}; {@code COPY_H2D}/{@code COPY_D2H offset size}:
 *       between a pinned host buffer and the arena.
 *   <li>{@code PROBE}: measure the device's fragmentation here.
 * </ul>
 *
 * @param kind the operation
 * @param event the 1-based trace event it comes from; 0 for setup and teardown
 * @param id what the operation acts on (see above), -1 where nothing
 * @param offsetBytes offset into the reservation or arena, -1 where none
 * @param sizeBytes bytes, 0 where none
 * @param sourceOffsetBytes a device-to-device copy's source offset, -1 otherwise
 */
public record PlanOp(Kind kind, long event, long id, long offsetBytes, long sizeBytes, long sourceOffsetBytes) {

  /** The kinds of device operation. */
  public enum Kind {
    ALLOC,
    FREE,
    RESERVE,
    RELEASE,
    CREATE_PHYSICAL,
    RELEASE_PHYSICAL,
    MAP,
    UNMAP,
    COPY_D2D,
    COPY_H2D,
    COPY_D2H,
    PROBE;

    /** Returns the name in {@code plan.jsonl}. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  static PlanOp of(Kind kind, long event, long id, long offsetBytes, long sizeBytes) {
    return new PlanOp(kind, event, id, offsetBytes, sizeBytes, -1);
  }

  /** Returns the op as one JSON line of {@code plan.jsonl} (fixed key order; absent fields left out). */
  public String toJsonLine() {
    StringBuilder b = new StringBuilder(96);
    b.append("{\"op\":\"").append(kind.label()).append("\",\"event\":").append(event);
    if (id >= 0) {
      b.append(",\"id\":").append(id);
    }
    if (offsetBytes >= 0) {
      b.append(",\"offset_bytes\":").append(offsetBytes);
    }
    if (sourceOffsetBytes >= 0) {
      b.append(",\"source_offset_bytes\":").append(sourceOffsetBytes);
    }
    if (sizeBytes > 0) {
      b.append(",\"size_bytes\":").append(sizeBytes);
    }
    return b.append('}').toString();
  }
}
