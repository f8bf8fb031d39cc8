package kvsim.trace;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.LongLongMap;
import kvsim.core.Tag;

/**
 * Streams a binary L1 trace ({@link BinaryTraceFormat}) one block at a time, decoding its columns
 * straight into {@link TraceEvent}s, with the semantic checks of the JSONL reader ({@link
 * L1TraceReader}): a non-positive size, an empty tag, an alloc of a live id, a free of an id that is
 * not live. Framing problems (bad magic, another layout version, a truncated file, a checksum
 * mismatch) are found by {@link BinaryBlocks.In}. Every message is one line, {@code file: event N
 * (block B): field: problem}; an event's {@link TraceEvent#line} is its number in the file (1 for
 * the first event). A replay takes the check of live ids over, as from the JSONL reader ({@link
 * #leaveLiveIdsToCaller}).
 */
public final class L1BinaryReader implements EventSource {
  private final BinaryBlocks.In in;
  private final String source;
  private final Path file;
  private LongLongMap liveEventById = new LongLongMap(1 << 12);
  private BinaryBlocks.Cursor block;
  private int left;
  private long blockIndex = -1;
  private long events;
  private long lastTimeNanos;
  private long blockTimeNanos;
  private long lastId;

  private L1BinaryReader(String source, Path file, InputStream in) throws IOException {
    this.source = source;
    this.file = file;
    this.in = new BinaryBlocks.In(source, in, BinaryTraceFormat.L1_MAGIC, L1Format.NAME, L1Format.VERSION, "L1 trace", "event");
  }

  /** Opens a binary trace file and reads its header. */
  public static L1BinaryReader open(Path file) throws IOException {
    return new L1BinaryReader(file.toString(), file, BinaryBlocks.openFile(file, "trace"));
  }

  /** Reads a binary trace from a stream; {@code source} names it in messages. */
  public static L1BinaryReader open(String source, InputStream in) throws IOException {
    return new L1BinaryReader(source, null, in);
  }

  /** Returns the header's fields. */
  public Map<String, Object> header() {
    return in.header;
  }

  /** Returns the number of events read so far. */
  public long eventsRead() {
    return events;
  }

  @Override
  public void leaveLiveIdsToCaller() {
    liveEventById = null;
  }

  @Override
  public InputException liveIdError(TraceEvent event) {
    return EventSource.errorOnReadingAgain(file, event);
  }

  @Override
  public String name() {
    return Path.of(source).getFileName().toString();
  }

  @Override
  public Map<String, Object> describe() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("trace", source);
    d.put("header", in.header);
    return d;
  }

  private InputException at(String field, String problem) {
    return new InputException(source + ": event " + events + " (block " + blockIndex + "): " + field + ": " + problem);
  }

  @Override
  public TraceEvent next() throws IOException {
    BinaryBlocks.Cursor c = block;
    if (left == 0) {
      if (c != null) {
        c.finish();
      }
      c = block = in.nextBlock(c, L1BinaryWriter.COLUMNS);
      if (c == null) {
        return null;
      }
      blockIndex++;
      left = c.records;
      blockTimeNanos = 0;
      lastId = 0;
    }
    left--;
    events++;
    int code = c.readByte(L1BinaryWriter.OPS);
    if ((code & ~L1BinaryWriter.KNOWN_BITS) != 0 || (code & 3) == 3) {
      throw at("op", "unknown op code " + code);
    }
    long t = blockTimeNanos + c.unsigned(L1BinaryWriter.TIME);
    if (t < blockTimeNanos || t < lastTimeNanos) {
      throw at("t", "time goes backwards: " + t + " ns after " + lastTimeNanos + " ns");
    }
    blockTimeNanos = t;
    lastTimeNanos = t;
    int op = code & 3;
    long id = -1;
    long size = 0;
    Tag tag = null;
    String action = null;
    if (op == L1BinaryWriter.OP_ANNOTATE) {
      if ((code & (L1BinaryWriter.SPLITTABLE | L1BinaryWriter.HAS_TAG)) != 0) {
        throw at("op", "op code " + code + " flags a tag or splittable on an annotate event");
      }
      size = c.unsigned(L1BinaryWriter.SIZE);
      if (size < 0) {
        throw at("size", "out of range");
      }
      action = c.string(L1BinaryWriter.ACTION);
    } else {
      id = lastId + c.signed(L1BinaryWriter.ID);
      lastId = id;
      if (id < 0) {
        throw at("id", "must not be negative, got " + id);
      }
      if (op == L1BinaryWriter.OP_ALLOC) {
        size = c.unsigned(L1BinaryWriter.SIZE);
        if (size <= 0) {
          throw at("size", "must be positive, got " + size);
        }
        if ((code & L1BinaryWriter.HAS_TAG) != 0) {
          String name = c.string(L1BinaryWriter.TAG);
          if (name.isEmpty()) {
            throw at("tag", "a tag must not be empty");
          }
          tag = Tag.of(name);
        } else {
          tag = Tag.KV;
        }
      } else if ((code & (L1BinaryWriter.SPLITTABLE | L1BinaryWriter.HAS_TAG)) != 0) {
        throw at("op", "op code " + code + " flags a tag or splittable on a free event");
      }
    }
    long stream = (code & L1BinaryWriter.HAS_STREAM) != 0 ? c.signed(L1BinaryWriter.STREAM) : 0;
    long addr = -1;
    if ((code & L1BinaryWriter.HAS_ADDR) != 0) {
      addr = c.unsigned(L1BinaryWriter.ADDR);
      if (addr < 0) {
        throw at("addr", "out of range");
      }
    }
    long line = events;
    switch (op) {
      case L1BinaryWriter.OP_ALLOC -> {
        if (liveEventById != null && !liveEventById.putIfAbsent(id, line)) {
          throw at("id", "id " + id + " is already live (allocated at event " + liveEventById.get(id, 0) + ")");
        }
        return new TraceEvent(line, t, TraceEvent.Op.ALLOC, id, size, tag, (code & L1BinaryWriter.SPLITTABLE) != 0, stream, addr, null);
      }
      case L1BinaryWriter.OP_FREE -> {
        if (liveEventById != null && liveEventById.remove(id, -1) == -1) {
          throw at("id", "free of id " + id + ", which is not live (never allocated, or already freed: double free)");
        }
        return new TraceEvent(line, t, TraceEvent.Op.FREE, id, 0, null, false, stream, addr, null);
      }
      default -> {
        return new TraceEvent(line, t, TraceEvent.Op.ANNOTATE, -1, size, null, false, stream, addr, action);
      }
    }
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
