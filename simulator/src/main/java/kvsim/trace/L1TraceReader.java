package kvsim.trace;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import kvsim.core.InputException;
import kvsim.core.LongLongMap;
import kvsim.core.Tag;

/**
 * Streams a kvsim L1 trace (JSONL, see {@link L1Format}) one event at a time with a single Jackson
 * token parser over the whole file ({@link JsonlReader}), so memory stays flat whatever the trace
 * length. Every problem is reported as {@code file:line: field: problem} and nothing is skipped:
 * malformed JSON, a missing, unknown or repeated field, a value of the wrong type, a non-positive size, time going backwards,
 * an allocation of an id that is live, a free of an id that is not.
 *
 * <p>The reader keeps the set of live ids (a primitive map from id to the line that allocated it),
 * which grows with the number of live allocations, not with the trace; a replay, which keeps the
 * same ids anyway, takes that check over ({@link #leaveLiveIdsToCaller}, Note [One table of live
 * ids] on {@code engine.ReplayEngine}) and reports this reader's message when it fails.
 */
public final class L1TraceReader extends JsonlReader implements EventSource {
  private final Path file;
  private LongLongMap liveLineById = new LongLongMap(1 << 12);
  private long lastTimeNanos;
  private long events;

  private L1TraceReader(String source, Path file, InputStream in) throws IOException {
    super(source, in, L1Format.NAME, L1Format.VERSION, "trace", "kvsim L1 trace");
    this.file = file;
  }

  /** Opens a trace file and reads its header. */
  public static L1TraceReader open(Path file) throws IOException {
    return new L1TraceReader(file.toString(), file, openFile(file, "trace"));
  }

  /** Reads a trace from a stream; {@code source} names it in messages. */
  public static L1TraceReader open(String source, InputStream in) throws IOException {
    return new L1TraceReader(source, null, in);
  }

  /** Returns the number of events read so far. */
  public long eventsRead() {
    return events;
  }

  @Override
  public void leaveLiveIdsToCaller() {
    liveLineById = null;
  }

  @Override
  public InputException liveIdError(TraceEvent event) {
    return EventSource.errorOnReadingAgain(file, event);
  }

  @Override
  protected String recordWord() {
    return "event";
  }

  @Override
  public TraceEvent next() throws IOException {
    long line = beginRecord();
    if (line < 0) {
      return null;
    }
    String op = null;
    long t = -1;
    long id = -1;
    long size = 0;
    boolean sizeGiven = false; // a flag, not a sentinel: every long, -1 included, is a size to judge
    String tag = null;
    Boolean splittable = null;
    long stream = 0;
    long addr = -1;
    String action = null;
    try {
      String field;
      int seen = 0;
      while ((field = nextFieldName()) != null) {
        JsonToken v = parser.nextToken();
        switch (field) {
          case "t" -> {
            seen = once(seen, 1, line, field);
            t = nonNegative(v, line, field);
          }
          case "op" -> {
            seen = once(seen, 2, line, field);
            op = string(v, line, field);
          }
          case "id" -> {
            seen = once(seen, 4, line, field);
            id = nonNegative(v, line, field);
          }
          case "size" -> {
            seen = once(seen, 8, line, field);
            size = integer(v, line, field);
            sizeGiven = true;
          }
          case "tag" -> {
            seen = once(seen, 16, line, field);
            tag = string(v, line, field);
          }
          case "splittable" -> {
            seen = once(seen, 32, line, field);
            if (v != JsonToken.VALUE_TRUE && v != JsonToken.VALUE_FALSE) {
              throw InputException.at(source, line, field, "must be true or false");
            }
            splittable = v == JsonToken.VALUE_TRUE;
          }
          case "stream" -> {
            seen = once(seen, 64, line, field);
            stream = integer(v, line, field);
          }
          case "addr" -> {
            seen = once(seen, 128, line, field);
            addr = nonNegative(v, line, field);
          }
          case "action" -> {
            seen = once(seen, 256, line, field);
            action = string(v, line, field);
          }
          default -> throw InputException.at(source, line, field, "unknown field (known: t, op, id, size, tag, splittable, stream, addr, action)");
        }
      }
    } catch (JsonProcessingException e) {
      throw malformed(e);
    }
    endRecord();
    if (op == null) {
      throw InputException.at(source, line, "op", "missing (alloc, free or annotate)");
    }
    if (t < 0) {
      t = lastTimeNanos;
    } else if (t < lastTimeNanos) {
      throw InputException.at(source, line, "t", "time goes backwards: " + t + " ns after " + lastTimeNanos + " ns");
    }
    lastTimeNanos = t;
    events++;
    switch (op) {
      case "alloc" -> {
        require(id >= 0, line, "id", "missing");
        require(sizeGiven, line, "size", "missing");
        require(size > 0, line, "size", "must be positive, got " + size);
        require(action == null, line, "action", "applies to annotate events only");
        Tag tg;
        try {
          tg = tag == null ? Tag.KV : Tag.of(tag);
        } catch (IllegalArgumentException e) {
          throw InputException.at(source, line, "tag", e.getMessage());
        }
        if (liveLineById != null && !liveLineById.putIfAbsent(id, line)) {
          throw InputException.at(source, line, "id", "id " + id + " is already live (allocated at line " + liveLineById.get(id, 0) + ")");
        }
        boolean split = splittable == null ? tg.splittableByDefault() : splittable;
        return new TraceEvent(line, t, TraceEvent.Op.ALLOC, id, size, tg, split, stream, addr, null);
      }
      case "free" -> {
        require(id >= 0, line, "id", "missing");
        require(!sizeGiven, line, "size", "does not apply to free events");
        require(tag == null && splittable == null && action == null, line, tag != null ? "tag" : splittable != null ? "splittable" : "action", "does not apply to free events");
        if (liveLineById != null && liveLineById.remove(id, -1) == -1) {
          throw InputException.at(source, line, "id", "free of id " + id + ", which is not live (never allocated, or already freed: double free)");
        }
        return new TraceEvent(line, t, TraceEvent.Op.FREE, id, 0, null, false, stream, addr, null);
      }
      case "annotate" -> {
        require(action != null, line, "action", "missing");
        require(id == -1 && tag == null && splittable == null, line, id != -1 ? "id" : tag != null ? "tag" : "splittable", "does not apply to annotate events");
        return new TraceEvent(line, t, TraceEvent.Op.ANNOTATE, -1, Math.max(size, 0), null, false, stream, addr, action);
      }
      default -> throw InputException.at(source, line, "op", "unknown op \"" + op + "\" (alloc, free or annotate)");
    }
  }
}
