package kvsim.trace;

/**
 * The kvsim L1 trace format, JSONL, version 1.
 *
 * <p>Line 1 is a header object: {@code {"format":"kvsim-l1","version":1, ...}}; any further header
 * fields (generator, parameters, seed, source file) are carried along as a description. Every
 * following line is one event object:
 *
 * <ul>
 *   <li>{@code {"t":1000,"op":"alloc","id":7,"size":1048576,"tag":"kv","splittable":true,"stream":0}}:
 *       {@code t} simulated time in ns (optional: an event without {@code t} happens at the
 *       previous event's time; times never decrease), {@code id} a non-negative integer that is
 *       not live, {@code size} positive bytes, {@code tag} (default {@code kv}), {@code splittable}
 *       (default: true for {@code kv} only), {@code stream} (default 0), {@code addr} (optional:
 *       the address a recorded system returned, kept for comparison, never used for placement).
 *   <li>{@code {"t":2000,"op":"free","id":7}}: frees a live id.
 *   <li>{@code {"t":2000,"op":"annotate","action":"segment_alloc","addr":0,"size":2097152}}: carried
 *       through from imported traces; replay ignores it.
 * </ul>
 */
public final class L1Format {
  /** The header's {@code format} value. */
  public static final String NAME = "kvsim-l1";
  /** The format version this kvsim reads and writes. */
  public static final int VERSION = 1;

  private L1Format() {}
}
