package kvsim.trace;

import kvsim.core.Tag;

/**
 * One L1 event: an allocation, a free, or an annotation carried through from an imported trace
 * (PyTorch's {@code segment_alloc} and friends) that replay ignores.
 *
 * @param line the source line (1-based) for error messages, 0 for generated events
 * @param timeNanos simulated time of the event
 * @param op what happens
 * @param id the allocation this event is about (alloc and free)
 * @param sizeBytes requested bytes (alloc; for annotations, the annotated size)
 * @param tag what the memory is for (alloc)
 * @param splittable whether the memory may be split into pages (alloc)
 * @param stream CUDA stream (0 = default)
 * @param addressBytes the address the recorded system returned or acted on, or -1 if unknown
 * @param action the annotation's action name (annotate only)
 */
public record TraceEvent(
    long line,
    long timeNanos,
    Op op,
    long id,
    long sizeBytes,
    Tag tag,
    boolean splittable,
    long stream,
    long addressBytes,
    String action) {

  /** The kind of an event. */
  public enum Op {
    ALLOC("alloc"),
    FREE("free"),
    ANNOTATE("annotate");

    private final String label;

    Op(String label) {
      this.label = label;
    }

    /** Returns the name used in trace files. */
    public String label() {
      return label;
    }
  }

  /** Returns a generated allocation event. */
  public static TraceEvent alloc(long timeNanos, long id, long sizeBytes, Tag tag, boolean splittable, long stream) {
    return new TraceEvent(0, timeNanos, Op.ALLOC, id, sizeBytes, tag, splittable, stream, -1, null);
  }

  /** Returns a generated free event. */
  public static TraceEvent free(long timeNanos, long id, long stream) {
    return new TraceEvent(0, timeNanos, Op.FREE, id, 0, null, false, stream, -1, null);
  }

  /** Returns an annotation event. */
  public static TraceEvent annotate(long timeNanos, String action, long addressBytes, long sizeBytes, long stream) {
    return new TraceEvent(0, timeNanos, Op.ANNOTATE, -1, sizeBytes, null, false, stream, addressBytes, action);
  }
}
