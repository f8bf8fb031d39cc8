package kvsim.trace;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import kvsim.core.InputException;
import kvsim.core.LongLongMap;
import kvsim.core.ReadAhead;
import kvsim.core.Tag;

/**
 * Streams a binary L1 trace ({@link BinaryTraceFormat}) one block at a time, with the semantic
 * checks of the JSONL reader ({@link L1TraceReader}): a non-positive size, an empty tag, an alloc
 * of a live id, a free of an id that is not live. Framing problems (bad magic, another layout
 * version, a truncated file, a checksum mismatch) are found by {@link BinaryBlocks.In}. Every
 * message is one line, {@code file: event N (block B): field: problem}; an event's {@link
 * TraceEvent#line} is its number in the file (1 for the first event). A replay takes the check of
 * live ids over, as from the JSONL reader ({@link #leaveLiveIdsToCaller}).
 *
 * <p>A {@link Decoder} decodes one event at a time as {@link #next} asks for it or, after {@link
 * #decodeAhead}, a chunk of events at a time into columns ({@link Chunk}) on a thread of its own,
 * from which {@link #next} builds each event (Note [Decoded ahead in columns]), or whose rows a
 * replay reads in place ({@link #nextRow}, Note [Rows read in place]). Either way it is
 * the same decoding and the same checks ({@link Decoder#decode}, which puts each event into a
 * {@link Sink}), and the events, their order and the first error, where it falls among them, are
 * the same ({@code DecodeAheadProperties}).
 *
 * <p>Note [Decoded ahead in columns]: decoding (varints, checks and the blocks' checksums) was a
 * sixth of a warm replay of the 2 M-event churn trace in async-profiler samples, and while one
 * replay runs the second core of a 2-core machine is idle. Events built on another core and handed
 * over as objects had cost more than they saved (Note [Trace files read on the engine's thread] on
 * {@code engine.ReplayEngine}): they reached the engine's core as cache misses, and a second thread
 * allocating beside the engine's brought more collections. The decoder's thread here allocates
 * nothing: it writes plain arrays, a chunk at a time, and the same few chunks go round between the
 * two threads (Note [Polled, not woken] on {@link Ahead}). An error is kept in its chunk after the
 * events before it and thrown where the caller reaches it; the decoder stops there. Through one
 * warm resident server, runs alternating, the engine's part of that replay took 0.22-0.25 s
 * decoded ahead against 0.28-0.29 s decoded on its own thread. The decoder's thread takes a few
 * milliseconds to start on a virtual machine, which the first chunk waits for, so a caller decodes
 * ahead only when a core is spare and the trace is long enough for it to pay ({@link
 * #worthDecodingAhead}).
 */
public final class L1BinaryReader implements EventSource {
  /** Events in a chunk decoded ahead: about 400 KiB of columns, four chunks in all (Note [Polled, not woken]). */
  static final int CHUNK_EVENTS_AHEAD = 1 << 13;
  /** Chunks decoded and waiting, at most, beside the one being read. */
  private static final int CHUNKS_AHEAD = 3;
  /**
   * The smallest file decoded ahead ({@link #worthDecodingAhead}): about 500,000 events of a churn
   * trace, whose decoding on the replay's own thread costs more than the few milliseconds the
   * decoder's thread takes to start (Note [Decoded ahead in columns]).
   */
  static final long AHEAD_MIN_BYTES = 4L << 20;

  private final Decoder decoder;
  private final String source;
  private final Path file;
  private LongLongMap liveEventById = new LongLongMap(1 << 12);
  private Chunk chunk;
  private int at;
  private long events;
  /** The decoder's thread after {@link #decodeAhead}, else null. */
  private Ahead ahead;

  private L1BinaryReader(String source, Path file, InputStream in) throws IOException {
    this.source = source;
    this.file = file;
    this.decoder = new Decoder(source, new BinaryBlocks.In(source, in, BinaryTraceFormat.L1_MAGIC, L1Format.NAME, L1Format.VERSION, "L1 trace", "event"));
  }

  /** Opens a binary trace file and reads its header. */
  public static L1BinaryReader open(Path file) throws IOException {
    return new L1BinaryReader(file.toString(), file, BinaryBlocks.openFile(file, "trace"));
  }

  /** Reads a binary trace from a stream; {@code source} names it in messages. */
  public static L1BinaryReader open(String source, InputStream in) throws IOException {
    return new L1BinaryReader(source, null, in);
  }

  /** Whether decoding ahead pays: for a file of at least {@value #AHEAD_MIN_BYTES} bytes, not for a stream or a short file. */
  public boolean worthDecodingAhead() {
    try {
      return file != null && Files.size(file) >= AHEAD_MIN_BYTES;
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * Decodes the events from now on on a thread of its own, a few chunks ahead (Note [Decoded ahead
   * in columns]), until {@link #close}; for a caller with a core to spare. Called before the first
   * {@link #next}.
   */
  public void decodeAhead() {
    decodeAhead(CHUNK_EVENTS_AHEAD, CHUNKS_AHEAD);
  }

  /** As {@link #decodeAhead()}, in chunks of {@code chunkEvents}, at most {@code chunksAhead} of them waiting (tests take small ones). */
  void decodeAhead(int chunkEvents, int chunksAhead) {
    if (ahead != null || decoder.blockIndex >= 0) { // decoded here already
      throw new IllegalStateException("decodeAhead after the first event");
    }
    ahead = new Ahead(decoder, chunkEvents, chunksAhead + 1);
  }

  /** Whether the events are decoded ahead ({@link #decodeAhead}), so that {@link #nextRow} may read them in place. */
  public boolean decodesAhead() {
    return ahead != null;
  }

  /** Whether the decoder's thread runs. */
  boolean decoding() {
    return ahead != null && ahead.thread.isAlive();
  }

  /** Returns the header's fields. */
  public Map<String, Object> header() {
    return decoder.in.header;
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
    d.put("header", decoder.in.header);
    return d;
  }

  /** An error at the event just read; its block is the decoder's, or its chunk's when decoded ahead. */
  private InputException at(String field, String problem) {
    long block = ahead == null ? decoder.blockIndex : chunk.blockIndex;
    return new InputException(source + ": event " + events + " (block " + block + "): " + field + ": " + problem);
  }

  @Override
  public TraceEvent next() throws IOException {
    TraceEvent e;
    if (ahead == null) { // decoded here, one event at a time
      e = decoder.decode(NEW_EVENT);
      if (e == null) {
        return null;
      }
    } else {
      int i = advanceRow();
      if (i < 0) {
        return null;
      }
      e = chunk.event(i, events + 1);
    }
    events = e.line();
    if (liveEventById != null) {
      checkLiveIds(e);
    }
    return e;
  }

  /**
   * Moves to the next event decoded ahead, whose fields the caller then reads one by one ({@link
   * #rowOp} and the methods after it) instead of as an object from {@link #next} (Note [Rows read
   * in place]); false at the end. Throws the decoder's error where it falls, as {@link #next} does.
   * Only after {@link #decodeAhead}, for a caller that checks live ids itself ({@link
   * #leaveLiveIdsToCaller}).
   *
   * <p>Note [Rows read in place]: an event built from the decoder's row is an object of ten fields
   * that the replay keeps until the next one, so the JIT cannot take it apart: each of the 2 M
   * events of the churn trace was allocated, its ten fields copied and most never read (a free
   * reads its id and stream), about an eighth of the replay's thread in async-profiler samples.
   * Read in place, a free reads three of the row's columns (op, time, id) and an allocation
   * five (and size, tag), each one more where it names a stream; the engine's part of that replay
   * through a warm resident server took 0.14-0.15 s against 0.21 s. JMH's {@code
   * ReplayBenchmark.replayKvtAhead}, whose trace has few refusals and so more work per event in
   * the model, gained about 6 %.
   */
  public boolean nextRow() throws IOException {
    if (ahead == null || liveEventById != null) {
      throw new IllegalStateException("rows are read only when decoded ahead, by a caller that checks live ids");
    }
    if (advanceRow() < 0) {
      return false;
    }
    events++;
    return true;
  }

  /** Moves to the next row decoded ahead and returns its index in {@code chunk}, or -1 at the end. */
  private int advanceRow() throws IOException {
    Chunk k = chunk;
    int i = at;
    if (k == null || i == k.count) {
      k = nextChunk();
      if (k == null) {
        return -1;
      }
      i = 0;
    }
    at = i + 1;
    return i;
  }

  /** The operation of the row {@link #nextRow} moved to. */
  public TraceEvent.Op rowOp() {
    return Chunk.OPS[chunk.ops[at - 1] & 3];
  }

  /** The time of the row {@link #nextRow} moved to. */
  public long rowTimeNanos() {
    return chunk.times[at - 1];
  }

  /** The id of the row {@link #nextRow} moved to: an allocation or a free. */
  public long rowId() {
    return chunk.ids[at - 1];
  }

  /** The requested size of the row {@link #nextRow} moved to: an allocation. */
  public long rowSizeBytes() {
    return chunk.sizes[at - 1];
  }

  /** The tag of the row {@link #nextRow} moved to: an allocation. */
  public Tag rowTag() {
    return chunk.tags[at - 1];
  }

  /** Whether the row {@link #nextRow} moved to may be split: an allocation. */
  public boolean rowSplittable() {
    return (chunk.ops[at - 1] & Chunk.SPLITTABLE) != 0;
  }

  /** The stream of the row {@link #nextRow} moved to, 0 where it names none. */
  public long rowStream() {
    int i = at - 1;
    return (chunk.ops[i] & Chunk.HAS_STREAM) != 0 ? chunk.streams[i] : 0;
  }

  /** The row {@link #nextRow} moved to, as the event {@link #next} would have returned (for messages). */
  public TraceEvent rowEvent() {
    return chunk.event(at - 1, events);
  }

  /** The check that an allocated id is not live and a freed one is. */
  private void checkLiveIds(TraceEvent e) {
    if (e.op() == TraceEvent.Op.ALLOC && !liveEventById.putIfAbsent(e.id(), e.line())) {
      throw at("id", "id " + e.id() + " is already live (allocated at event " + liveEventById.get(e.id(), 0) + ")");
    }
    if (e.op() == TraceEvent.Op.FREE && liveEventById.remove(e.id(), -1) == -1) {
      throw at("id", "free of id " + e.id() + ", which is not live (never allocated, or already freed: double free)");
    }
  }

  /** The next chunk decoded ahead with events, or null at the end; throws the decoder's error where it fell. */
  private Chunk nextChunk() throws IOException {
    Chunk k = chunk;
    while (true) {
      if (k != null && k.error != null) {
        if (k.error instanceof IOException e) {
          throw e;
        }
        if (k.error instanceof RuntimeException e) {
          throw e;
        }
        throw (Error) k.error;
      }
      if (k != null && k.end) {
        return null;
      }
      k = ahead.take(k != null);
      chunk = k;
      at = 0;
      if (k.count > 0) {
        return k;
      }
    }
  }

  @Override
  public void close() throws IOException {
    if (ahead != null) {
      ahead.close(); // the decoder's thread has ended before its stream is closed
    }
    decoder.in.close();
  }

  /**
   * The decoder on a thread of its own, filling a ring of chunks ahead of the reader. The reader
   * holds one chunk at a time and hands it back when it has read it; neither side wakes the other
   * (Note [Polled, not woken]).
   *
   * <p>Note [Polled, not woken]: the decoder is faster than the replay, so it mostly waits for a
   * chunk to come back. With a lock and a condition the reader woke it at every chunk, and each
   * wake, a system call on the engine's thread, cost about 45 us on a virtual machine: 4 % of the
   * engine's thread in async-profiler samples, as much as it had saved. Here the two share two
   * counters, chunks filled and chunks handed back, and a side that must wait looks again after a
   * short sleep of its own ({@link #POLL_NANOS}); the engine's thread makes no system call. A
   * sleep on a virtual machine may last a few milliseconds, so the ring holds more than a sleep's
   * worth of the replay's work: four chunks of 8,192 events, about 2.5 ms at 75 ns an event, where
   * four of 4,096 left the reader waiting more often and rings of 4 to 16 chunks replayed within
   * the noise of each other.
   */
  static final class Ahead {
    /** How long a waiting side sleeps before it looks again. */
    static final long POLL_NANOS = 50_000;
    private final Chunk[] ring;
    private final Thread thread;
    /** Chunks filled so far; written by the decoder's thread only. */
    private volatile long filled;
    /** Chunks handed back so far; written by the reader only. */
    private volatile long handedBack;
    private volatile boolean closed;
    /** Chunks the reader has taken (the reader's own count). */
    private long taken;

    Ahead(Decoder decoder, int chunkEvents, int chunks) {
      ring = new Chunk[chunks];
      thread = new Thread(() -> decode(decoder, chunkEvents), "kvsim-trace-decode");
      thread.setDaemon(true);
      thread.start();
    }

    private void decode(Decoder decoder, int chunkEvents) {
      for (long n = 0; ; n++) {
        while (n - handedBack >= ring.length) {
          if (closed) {
            return;
          }
          LockSupport.parkNanos(POLL_NANOS);
        }
        if (closed) {
          return;
        }
        int slot = (int) (n % ring.length);
        Chunk k = ring[slot];
        if (k == null) {
          k = ring[slot] = new Chunk(chunkEvents);
        }
        try {
          decoder.fill(k);
        } catch (Throwable t) { // not the trace's fault: handed to the reader all the same
          k.count = 0;
          k.end = false;
          k.error = t;
        }
        filled = n + 1; // publishes the chunk's columns
        if (k.end || k.error != null) {
          return;
        }
      }
    }

    /** Hands back the chunk held, if any, and returns the next one, waiting for it if need be. */
    Chunk take(boolean handBack) {
      if (handBack) {
        handedBack = taken;
      }
      long n = taken;
      for (int spins = 0; filled <= n; spins++) {
        if (spins < 100) {
          Thread.onSpinWait();
        } else {
          LockSupport.parkNanos(POLL_NANOS / 5);
        }
      }
      taken = n + 1;
      return ring[(int) (n % ring.length)];
    }

    /** Stops the decoder and waits until its thread has ended. */
    void close() {
      closed = true;
      ReadAhead.awaitEnd(thread);
    }
  }

  /**
   * Up to a chunk of decoded events, column by column, then the end of the trace or the error that
   * stopped the decoder; a column holds what the event's op code says it has.
   */
  static final class Chunk implements Sink {
    private static final int SPLITTABLE = 4;
    private static final int HAS_STREAM = 8;
    private static final int HAS_ADDR = 16;
    private static final TraceEvent.Op[] OPS = TraceEvent.Op.values();
    /** The op's ordinal and the flags above. */
    final byte[] ops;
    final long[] times;
    final long[] ids;
    final long[] sizes;
    final Tag[] tags;
    final long[] streams;
    final long[] addrs;
    final String[] actions;
    int count;
    long blockIndex;
    boolean end;
    Throwable error;

    Chunk(int capacity) {
      ops = new byte[capacity];
      times = new long[capacity];
      ids = new long[capacity];
      sizes = new long[capacity];
      tags = new Tag[capacity];
      streams = new long[capacity];
      addrs = new long[capacity];
      actions = new String[capacity];
    }

    /** Writes the event into the next row, the fields its op has and the others' defaults left out; returns null. */
    @Override
    public TraceEvent put(long line, long timeNanos, TraceEvent.Op op, long id, long sizeBytes, Tag tag, boolean splittable, long stream, long addressBytes, String action) {
      int i = count++;
      int flags = op.ordinal() | (splittable ? SPLITTABLE : 0);
      times[i] = timeNanos;
      if (op != TraceEvent.Op.ANNOTATE) {
        ids[i] = id;
      }
      if (op != TraceEvent.Op.FREE) {
        sizes[i] = sizeBytes;
      }
      if (op == TraceEvent.Op.ALLOC) {
        tags[i] = tag;
      } else if (op == TraceEvent.Op.ANNOTATE) {
        actions[i] = action;
      }
      if (stream != 0) {
        streams[i] = stream;
        flags |= HAS_STREAM;
      }
      if (addressBytes != -1) {
        addrs[i] = addressBytes;
        flags |= HAS_ADDR;
      }
      ops[i] = (byte) flags;
      return null;
    }

    /** The event in row {@code i}, numbered {@code line}. */
    TraceEvent event(int i, long line) {
      int flags = ops[i];
      TraceEvent.Op op = OPS[flags & 3];
      return new TraceEvent(
          line,
          times[i],
          op,
          op != TraceEvent.Op.ANNOTATE ? ids[i] : -1,
          op != TraceEvent.Op.FREE ? sizes[i] : 0,
          op == TraceEvent.Op.ALLOC ? tags[i] : null,
          (flags & SPLITTABLE) != 0,
          (flags & HAS_STREAM) != 0 ? streams[i] : 0,
          (flags & HAS_ADDR) != 0 ? addrs[i] : -1,
          op == TraceEvent.Op.ANNOTATE ? actions[i] : null);
    }
  }

  /** Where the decoder puts each event: into a new {@link TraceEvent} ({@link #NEW_EVENT}), or a row of a {@link Chunk}. */
  interface Sink {
    /** Puts the event with these fields; returns it where it is an object, else null. */
    TraceEvent put(long line, long timeNanos, TraceEvent.Op op, long id, long sizeBytes, Tag tag, boolean splittable, long stream, long addressBytes, String action);
  }

  /** Puts each event into a new {@link TraceEvent}. */
  static final Sink NEW_EVENT = TraceEvent::new;

  /** Reads blocks and decodes their events one at a time, with the checks of each ({@link #next}), or a chunk of them ({@link #fill}). */
  static final class Decoder {
    final BinaryBlocks.In in;
    private final String source;
    private BinaryBlocks.Cursor block;
    private int left;
    long blockIndex = -1;
    private long events;
    private long lastTimeNanos;
    private long blockTimeNanos;
    private long lastId;

    Decoder(String source, BinaryBlocks.In in) {
      this.source = source;
      this.in = in;
    }

    /**
     * Fills {@code k} with the next events of one block, then the end or the error that stopped
     * the decoder after the events before it (the last fill: decoding goes no further).
     */
    void fill(Chunk k) {
      k.count = 0;
      k.end = false;
      k.error = null;
      try {
        int capacity = k.ops.length;
        while (k.count < capacity && (k.count == 0 || left > 0)) { // one block's events: its index is the chunk's
          int before = k.count;
          decode(k); // puts the event into the next row, or nothing at the trace's end
          if (k.count == before) {
            k.end = true;
            return;
          }
          k.blockIndex = blockIndex;
        }
      } catch (IOException | RuntimeException e) {
        k.error = e;
      }
    }

    private InputException at(String field, String problem) {
      return new InputException(source + ": event " + events + " (block " + blockIndex + "): " + field + ": " + problem);
    }

    /**
     * Decodes and checks the next event, reading the next block where this one ends, and puts it
     * into {@code sink}; returns what the sink returns, or null at the trace's end, where nothing
     * is put.
     */
    TraceEvent decode(Sink sink) throws IOException {
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
      return switch (op) {
        case L1BinaryWriter.OP_ALLOC -> sink.put(events, t, TraceEvent.Op.ALLOC, id, size, tag, (code & L1BinaryWriter.SPLITTABLE) != 0, stream, addr, null);
        case L1BinaryWriter.OP_FREE -> sink.put(events, t, TraceEvent.Op.FREE, id, 0, null, false, stream, addr, null);
        default -> sink.put(events, t, TraceEvent.Op.ANNOTATE, -1, size, null, false, stream, addr, action);
      };
    }
  }
}
