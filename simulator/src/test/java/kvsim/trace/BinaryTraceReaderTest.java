package kvsim.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.core.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The binary readers refuse every damaged or wrong file with one line naming the file and the
 * block or record: bad magic, another layout or format version, a truncated file, a checksum
 * mismatch, and the semantic errors the JSONL readers find (double free, a live id allocated again,
 * ids not increasing, hashes that do not fit the prompt).
 */
class BinaryTraceReaderTest {
  @TempDir Path dir;

  private static final List<TraceEvent> EVENTS = List.of(
      TraceEvent.alloc(0, 1, 4096, Tag.KV, true, 0),
      TraceEvent.alloc(5, 2, 1 << 20, Tag.ACTIVATION, false, 7),
      TraceEvent.free(9, 2, 7),
      TraceEvent.annotate(9, "segment_alloc", 0, 2 << 20, 0),
      TraceEvent.free(10, 1, 0));

  /** The events in blocks of {@code blockRecords}, with the given header. */
  private static byte[] l1(List<TraceEvent> events, int blockRecords, Map<String, Object> header) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    L1BinaryWriter w = new L1BinaryWriter(b, header, blockRecords);
    for (TraceEvent e : events) {
      w.write(e);
    }
    w.finish();
    return b.toByteArray();
  }

  private static byte[] l1(List<TraceEvent> events, int blockRecords) throws IOException {
    return l1(events, blockRecords, L1TraceWriter.header(Map.of("generator", "test")));
  }

  private static long readAll(byte[] bytes) throws IOException {
    try (L1BinaryReader r = L1BinaryReader.open("t.kvt", new ByteArrayInputStream(bytes))) {
      while (r.next() != null) {
        // read on
      }
      return r.eventsRead();
    }
  }

  private static String error(byte[] bytes) {
    return assertThrows(InputException.class, () -> readAll(bytes)).getMessage();
  }

  /** The offset of the first block's frame: magic, layout version, header length, header, its CRC. */
  private static int firstBlock(byte[] bytes) {
    return 8 + 8 + BinaryBlocks.getInt(bytes, 12) + 4;
  }

  @Test
  void readsBackWhatTheWriterWrote() throws IOException {
    assertEquals(5, readAll(l1(EVENTS, 2)));
    assertEquals(5, readAll(l1(EVENTS, 65536)));
    assertEquals(0, readAll(l1(List.of(), 2)));
  }

  @Test
  void aFileThatIsNotABinaryTraceIsRefusedByItsMagic() throws IOException {
    byte[] b = l1(EVENTS, 2);
    b[6] = 'X';
    assertEquals("t.kvt: not a binary L1 trace (the file does not start with \"KVSIM-L1\")", error(b));
    assertEquals("t.kvt: not a binary L1 trace (the file does not start with \"KVSIM-L1\")", error(new byte[3]));
  }

  @Test
  void aFileOfAnUnknownBinaryKindIsRefusedByTheSniffer() throws IOException {
    byte[] b = l1(EVENTS, 2);
    b[6] = 'X';
    Path f = dir.resolve("x.kvt");
    Files.write(f, b);
    String expected = f + ": not a binary trace kvsim knows (it starts with \"KVSIM-\" but neither \"KVSIM-L1\" nor \"KVSIM-RQ\")";
    assertEquals(expected, assertThrows(InputException.class, () -> TraceFiles.openL1(f)).getMessage());
    assertEquals(expected, assertThrows(InputException.class, () -> TraceFiles.openRequests(f)).getMessage());
    assertEquals(expected, assertThrows(InputException.class, () -> TraceFiles.formatOf(f)).getMessage());
  }

  @Test
  void anotherLayoutVersionIsRefused() throws IOException {
    byte[] b = l1(EVENTS, 2);
    BinaryBlocks.putInt(b, 8, 2);
    assertEquals("t.kvt: unsupported binary layout version 2 (this kvsim reads version 1)", error(b));
  }

  @Test
  void anotherFormatVersionInTheHeaderIsRefused() throws IOException {
    Map<String, Object> h = new LinkedHashMap<>();
    h.put("format", "kvsim-l1");
    h.put("version", 2);
    assertEquals("t.kvt: header: version: unsupported L1 trace version 2 (this kvsim reads version 1)", error(l1(EVENTS, 2, h)));
  }

  @Test
  void aDamagedHeaderIsACorruptHeader() throws IOException {
    byte[] b = l1(EVENTS, 2);
    b[20] ^= 1;
    assertEquals("t.kvt: corrupt file header: checksum mismatch", error(b));
  }

  @Test
  void aFileCutInsideABlockNamesTheBlock() throws IOException {
    byte[] b = l1(EVENTS, 2);
    int second = firstBlock(b) + 12 + BinaryBlocks.getInt(b, firstBlock(b) + 4);
    byte[] cut = Arrays.copyOf(b, second + 14);
    assertEquals("t.kvt: truncated: the file ends inside block 1 (events from 3) (2 of " + BinaryBlocks.getInt(b, second + 4) + " bytes)", error(cut));
  }

  @Test
  void aFileCutAtABlockBoundaryLacksItsEndBlock() throws IOException {
    byte[] b = l1(EVENTS, 2);
    int second = firstBlock(b) + 12 + BinaryBlocks.getInt(b, firstBlock(b) + 4);
    assertEquals("t.kvt: truncated: the file ends before block 1 (events from 3) (no end block: the writer did not finish)", error(Arrays.copyOf(b, second)));
  }

  @Test
  void aFlippedByteInABlockFailsItsChecksum() throws IOException {
    byte[] b = l1(EVENTS, 2);
    b[firstBlock(b) + 12 + 3] ^= 0x10;
    assertEquals("t.kvt: corrupt block 0 (events from 1): checksum mismatch", error(b));
  }

  @Test
  void bytesAfterTheEndBlockAreRefused() throws IOException {
    byte[] b = l1(EVENTS, 2);
    assertEquals("t.kvt: corrupt: bytes after the end block", error(Arrays.copyOf(b, b.length + 1)));
  }

  @Test
  void anEndBlockThatCountsOtherwiseIsRefused() throws IOException {
    byte[] b = l1(EVENTS, 2);
    BinaryBlocks.putLong(b, b.length - 8, 6);
    assertEquals("t.kvt: corrupt end block: it counts 6 events, the blocks held 5", error(b));
  }

  @Test
  void aDoubleFreeIsRefusedAtItsEvent() throws IOException {
    byte[] b = l1(List.of(TraceEvent.alloc(0, 1, 4096, Tag.KV, true, 0), TraceEvent.free(1, 1, 0), TraceEvent.free(2, 1, 0)), 2);
    assertEquals("t.kvt: event 3 (block 1): id: free of id 1, which is not live (never allocated, or already freed: double free)", error(b));
  }

  @Test
  void anAllocOfALiveIdIsRefusedAtItsEvent() throws IOException {
    byte[] b = l1(List.of(TraceEvent.alloc(0, 1, 4096, Tag.KV, true, 0), TraceEvent.alloc(1, 1, 4096, Tag.KV, true, 0)), 8);
    assertEquals("t.kvt: event 2 (block 0): id: id 1 is already live (allocated at event 1)", error(b));
  }

  @Test
  void aNonPositiveSizeIsRefused() throws IOException {
    byte[] b = l1(List.of(TraceEvent.alloc(0, 1, 0, Tag.KV, true, 0)), 8);
    assertEquals("t.kvt: event 1 (block 0): size: must be positive, got 0", error(b));
  }

  @Test
  void anL1TraceIsNotARequestTraceAndTheOtherWayRound() throws IOException {
    Path l1 = dir.resolve("t.kvt");
    Files.write(l1, l1(EVENTS, 2));
    assertEquals(l1 + ": is a binary L1 trace (kvsim-l1), not a request trace; replay and compare run it",
        assertThrows(InputException.class, () -> TraceFiles.openRequests(l1)).getMessage());
    Path rq = dir.resolve("r.kvr");
    Files.write(rq, requests(List.of(Request.of(0, 0, 10, 10)), 0));
    assertEquals(rq + ": is a binary request trace (kvsim-requests), not an L1 trace; serving and capacity run it",
        assertThrows(InputException.class, () -> TraceFiles.openL1(rq)).getMessage());
    try (EventSource s = TraceFiles.openL1(l1)) {
      assertEquals("test", TraceFiles.header(s).get("generator"));
    }
    assertEquals(L1Format.NAME, TraceFiles.formatOf(l1));
    assertEquals(RequestFormat.NAME, TraceFiles.formatOf(rq));
  }

  private static byte[] requests(List<Request> requests, int hashBlockTokens) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    RequestBinaryWriter w = new RequestBinaryWriter(b, Map.of(), hashBlockTokens, 2);
    for (Request r : requests) {
      w.write(r);
    }
    w.finish();
    return b.toByteArray();
  }

  private static String requestError(byte[] bytes) {
    return assertThrows(InputException.class, () -> {
      try (RequestBinaryReader r = RequestBinaryReader.open("r.kvr", new ByteArrayInputStream(bytes))) {
        while (r.next() != null) {
          // read on
        }
      }
    }).getMessage();
  }

  @Test
  void requestIdsMustIncreaseAcrossBlocks() throws IOException {
    assertEquals("r.kvr: request 3 (block 1): id: ids must increase along the file: 4 after 5",
        requestError(requests(List.of(Request.of(1, 0, 10, 10), Request.of(5, 0, 10, 10), Request.of(4, 0, 10, 10)), 0)));
  }

  @Test
  void requestTimeMustNotGoBackwards() throws IOException {
    assertEquals("r.kvr: request 3 (block 1): t: time goes backwards: 5 ns after 9 ns",
        requestError(requests(List.of(Request.of(1, 0, 10, 10), Request.of(2, 9, 10, 10), Request.of(3, 5, 10, 10)), 0)));
  }

  @Test
  void requestHashesMustFitThePrompt() throws IOException {
    Request r = new Request(0, 1, 0, 100, 10, new long[] {1, 2}, 1, 1);
    assertEquals("r.kvr: request 1 (block 0): hash_ids: 2 hashes for 100 prompt tokens; expected 7 (one per 16 tokens, the last one partial)",
        requestError(requests(List.of(r), 16)));
    assertEquals("r.kvr: request 1 (block 0): hash_ids: given, but the header has no hash_block_tokens", requestError(requests(List.of(r), 0)));
  }

  @Test
  void samplesAndBeamsNotBoth() throws IOException {
    assertEquals("r.kvr: request 1 (block 0): beam_width: n and beam_width cannot both be above 1",
        requestError(requests(List.of(new Request(0, 1, 0, 100, 10, null, 2, 2)), 0)));
  }

  @Test
  void requestsReadBack() throws IOException {
    byte[] b = requests(List.of(Request.of(3, 7, 10, 11), new Request(0, 9, 8, 33, 2, new long[] {-5, Long.MAX_VALUE, 0}, 1, 4)), 16);
    try (RequestBinaryReader r = RequestBinaryReader.open("r.kvr", new ByteArrayInputStream(b))) {
      assertEquals(16, r.hashBlockTokens());
      assertEquals(new Request(1, 3, 7, 10, 11, null, 1, 1), r.next());
      assertEquals(new Request(2, 9, 8, 33, 2, new long[] {-5, Long.MAX_VALUE, 0}, 1, 4), r.next());
      assertNull(r.next());
      assertNull(r.next());
    }
    assertEquals("r.kvr: truncated: the file ends inside the frame of block 1 (requests from 3) (no end block: the writer did not finish)",
        requestError(Arrays.copyOf(b, b.length - 1)));
  }
}
