package kvsim.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32C;
import kvsim.core.InputException;
import kvsim.core.Tag;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * A binary trace decoded ahead on a thread of its own ({@link L1BinaryReader#decodeAhead}) reads
 * exactly as one decoded on the caller's thread: the same events, then the same end or the same
 * first error after the same events, whatever the chunks, the ring and the damage (a byte changed
 * under a checksum made to match, so the decoder's own checks meet it; a file cut short; a live id
 * allocated again or a free of an id that is not live); and its thread has ended once the reader is
 * closed, however early.
 */
class DecodeAheadProperties {
  /** Reads {@code bytes} to the end: each event, then "end" or the error that stopped it. */
  private static List<String> readAll(byte[] bytes, boolean checkLiveIds, int chunkEvents, int chunksAhead) {
    return readAll(bytes, checkLiveIds, chunkEvents, chunksAhead, false);
  }

  /**
   * As above; with {@code rows}, each event is read in place ({@link L1BinaryReader#nextRow}) and
   * built from the fields a replay reads, which must agree with the row's own event.
   */
  private static List<String> readAll(byte[] bytes, boolean checkLiveIds, int chunkEvents, int chunksAhead, boolean rows) {
    List<String> out = new ArrayList<>();
    try (L1BinaryReader r = L1BinaryReader.open("t.kvt", new ByteArrayInputStream(bytes))) {
      if (!checkLiveIds) {
        r.leaveLiveIdsToCaller();
      }
      if (chunkEvents > 0) {
        r.decodeAhead(chunkEvents, chunksAhead);
      }
      TraceEvent e;
      while ((e = rows ? nextRow(r) : r.next()) != null) {
        out.add(e.toString());
      }
      out.add("end after " + r.eventsRead() + " events");
    } catch (IOException | RuntimeException e) {
      out.add(e.getClass().getSimpleName() + ": " + e.getMessage());
    }
    return out;
  }

  /** The next event read in place, from the fields its op has, or null at the end. */
  private static TraceEvent nextRow(L1BinaryReader r) throws IOException {
    if (!r.nextRow()) {
      return null;
    }
    TraceEvent whole = r.rowEvent();
    TraceEvent.Op op = r.rowOp();
    boolean alloc = op == TraceEvent.Op.ALLOC;
    TraceEvent read = new TraceEvent(r.eventsRead(), r.rowTimeNanos(), op,
        op == TraceEvent.Op.ANNOTATE ? -1 : r.rowId(),
        op == TraceEvent.Op.FREE ? 0 : r.rowSizeBytes(),
        alloc ? r.rowTag() : null,
        alloc && r.rowSplittable(),
        r.rowStream(), whole.addressBytes(), whole.action());
    assertEquals(whole, read, "the fields read in place make the row's event");
    return read;
  }

  private static byte[] binary(List<TraceEvent> events, int blockRecords) throws IOException {
    java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
    L1BinaryWriter w = new L1BinaryWriter(b, L1TraceWriter.header(java.util.Map.of("generator", "test")), blockRecords);
    for (TraceEvent e : events) {
      w.write(e);
    }
    w.finish();
    return b.toByteArray();
  }

  /** Changes one byte of one block's payload and makes its checksum match again, so the decoder meets the change. */
  private static void changeUnderChecksum(byte[] b, Random rnd) {
    List<int[]> blocks = new ArrayList<>(); // payload offset, length
    int at = 8 + 8 + BinaryBlocks.getInt(b, 12) + 4;
    while (BinaryBlocks.getInt(b, at) != 0) {
      int len = BinaryBlocks.getInt(b, at + 4);
      blocks.add(new int[] {at, len});
      at += 12 + len;
    }
    if (blocks.isEmpty()) {
      return;
    }
    int[] block = blocks.get(rnd.nextInt(blocks.size()));
    int payload = block[0] + 12;
    b[payload + rnd.nextInt(block[1])] ^= (byte) (1 << rnd.nextInt(8));
    CRC32C crc = new CRC32C();
    crc.update(b, payload, block[1]);
    BinaryBlocks.putInt(b, block[0] + 8, (int) crc.getValue());
  }

  @Property(tries = 300)
  void decodedAheadReadsAsDecodedInPlace(
      @ForAll long seed,
      @ForAll @IntRange(min = 0, max = 400) int count,
      @ForAll @IntRange(min = 1, max = 60) int blockRecords,
      @ForAll @IntRange(min = 1, max = 50) int chunkEvents,
      @ForAll @IntRange(min = 1, max = 4) int chunksAhead,
      @ForAll @IntRange(min = 0, max = 3) int damage,
      @ForAll boolean checkLiveIds)
      throws IOException {
    Random rnd = new Random(seed);
    List<TraceEvent> events = new ArrayList<>(BinaryTraceProperties.randomEvents(seed, count));
    if (damage == 3 && !events.isEmpty()) { // an event the live ids refuse, somewhere
      int i = rnd.nextInt(events.size() + 1);
      long time = i == 0 ? 0 : events.get(i - 1).timeNanos();
      events.add(i, rnd.nextBoolean()
          ? new TraceEvent(0, time, TraceEvent.Op.FREE, rnd.nextInt(1000), 0, null, false, 0, -1, null)
          : new TraceEvent(0, time, TraceEvent.Op.ALLOC, rnd.nextInt(1000), 4096, Tag.KV, true, 0, -1, null));
    }
    byte[] bytes = binary(events, blockRecords);
    if (damage == 1) {
      changeUnderChecksum(bytes, rnd);
    } else if (damage == 2) {
      bytes = Arrays.copyOf(bytes, rnd.nextInt(bytes.length + 1));
    }
    List<String> inPlace = readAll(bytes, checkLiveIds, 0, 0);
    assertEquals(inPlace, readAll(bytes, checkLiveIds, chunkEvents, chunksAhead));
    if (!checkLiveIds) { // rows are read by a caller that checks live ids itself
      assertEquals(inPlace, readAll(bytes, false, chunkEvents, chunksAhead, true), "read in place");
    }
    if (damage == 0) {
      assertEquals("end after " + events.size() + " events", inPlace.get(inPlace.size() - 1), "an undamaged trace reads to its end");
    }
  }

  @Property(tries = 60)
  void closingStopsTheDecoderWhereverTheReaderIs(
      @ForAll long seed, @ForAll @IntRange(min = 0, max = 300) int count, @ForAll @IntRange(min = 0, max = 300) int read, @ForAll @IntRange(min = 1, max = 20) int chunkEvents)
      throws IOException {
    byte[] bytes = binary(BinaryTraceProperties.randomEvents(seed, count), 16);
    L1BinaryReader r = L1BinaryReader.open("t.kvt", new ByteArrayInputStream(bytes));
    r.decodeAhead(chunkEvents, 1);
    for (int i = 0; i < read && r.next() != null; i++) {
      // read on
    }
    r.close();
    assertFalse(r.decoding(), "the decoder's thread has ended");
  }

  @Test
  void rowsAreReadOnlyDecodedAheadByACallerThatChecksLiveIds() throws IOException {
    byte[] bytes = binary(BinaryTraceProperties.randomEvents(1, 10), 4);
    try (L1BinaryReader r = L1BinaryReader.open("t.kvt", new ByteArrayInputStream(bytes))) {
      r.leaveLiveIdsToCaller();
      assertThrows(IllegalStateException.class, r::nextRow, "decoded in place");
    }
    try (L1BinaryReader r = L1BinaryReader.open("t.kvt", new ByteArrayInputStream(bytes))) {
      r.decodeAhead();
      assertThrows(IllegalStateException.class, r::nextRow, "the reader checks live ids");
    }
  }

  @Test
  void decodingAheadIsChosenBeforeTheFirstEvent() throws IOException {
    byte[] bytes = binary(BinaryTraceProperties.randomEvents(1, 10), 4);
    try (L1BinaryReader r = L1BinaryReader.open("t.kvt", new ByteArrayInputStream(bytes))) {
      r.next();
      assertThrows(IllegalStateException.class, r::decodeAhead);
    }
    try (L1BinaryReader r = L1BinaryReader.open("t.kvt", new ByteArrayInputStream(bytes))) {
      r.decodeAhead();
      assertThrows(IllegalStateException.class, r::decodeAhead);
      assertEquals(1, r.next().line());
    }
  }

  @Test
  void anErrorAfterTheFirstChunkComesAfterEveryEventBeforeIt() throws IOException {
    List<TraceEvent> events = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      events.add(new TraceEvent(0, i, TraceEvent.Op.ALLOC, i, 4096, Tag.KV, true, 0, -1, null));
    }
    events.add(new TraceEvent(0, 100, TraceEvent.Op.FREE, 500, 0, null, false, 0, -1, null));
    byte[] bytes = binary(events, 30);
    List<String> read = readAll(bytes, true, 7, 2);
    assertEquals(101, read.size());
    assertEquals(
        InputException.class.getSimpleName() + ": t.kvt: event 101 (block 3): id: free of id 500, which is not live (never allocated, or already freed: double free)",
        read.get(100));
  }

  @Test
  void onlyALongFileIsWorthDecodingAhead(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws IOException {
    byte[] bytes = binary(BinaryTraceProperties.randomEvents(2, 50), 16);
    try (L1BinaryReader r = L1BinaryReader.open("t.kvt", new ByteArrayInputStream(bytes))) {
      assertFalse(r.worthDecodingAhead(), "a stream");
    }
    java.nio.file.Path small = dir.resolve("small.kvt");
    java.nio.file.Files.write(small, bytes);
    try (L1BinaryReader r = L1BinaryReader.open(small)) {
      assertFalse(r.worthDecodingAhead(), "a short file");
    }
    java.nio.file.Path large = dir.resolve("large.kvt"); // the size alone decides: padded past the threshold
    java.nio.file.Files.write(large, Arrays.copyOf(bytes, (int) L1BinaryReader.AHEAD_MIN_BYTES));
    try (L1BinaryReader r = L1BinaryReader.open(large)) {
      org.junit.jupiter.api.Assertions.assertTrue(r.worthDecodingAhead(), "a long file");
    }
  }
}
