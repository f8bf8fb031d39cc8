package kvsim.trace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import kvsim.core.Tag;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * Random traces, L1 and request, carrying every field either JSONL form can: JSONL to binary and
 * back gives the same JSONL bytes and the same records, across block boundaries (small blocks).
 */
class BinaryTraceProperties {
  private static final String[] TAGS = {"kv", "activation", "temp", "weights", "my \"odd\" tag", "ünï\ncode"};
  private static final String[] ACTIONS = {"segment_alloc", "segment_free", "oom", "recording_start", "a,b \"c\""};

  static List<TraceEvent> randomEvents(long seed, int count) {
    Random rnd = new Random(seed);
    List<TraceEvent> out = new ArrayList<>();
    List<Long> live = new ArrayList<>();
    long t = rnd.nextBoolean() ? 0 : rnd.nextLong() >>> 2;
    long nextId = rnd.nextInt(3) == 0 ? Long.MAX_VALUE - 100L * count - 1000 : rnd.nextInt(1000);
    for (int i = 0; i < count; i++) {
      int kind = rnd.nextInt(10);
      t += rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(3) == 0 ? rnd.nextInt(1 << 30) : rnd.nextInt(5000);
      long stream = rnd.nextInt(3) == 0 ? rnd.nextInt(9) - 4 : rnd.nextInt(20) == 0 ? Long.MIN_VALUE + rnd.nextInt(5) : 0;
      long addr = rnd.nextBoolean() ? -1 : rnd.nextInt(5) == 0 ? Long.MAX_VALUE - rnd.nextInt(5) : rnd.nextLong() >>> 20;
      if (kind < 5 || live.isEmpty() && kind < 9) {
        long id = rnd.nextInt(4) == 0 ? nextId + rnd.nextInt(50) : nextId;
        while (live.contains(id)) {
          id++;
        }
        nextId = Math.max(nextId, id + 1);
        live.add(id);
        Tag tag = Tag.of(TAGS[rnd.nextInt(TAGS.length)]);
        long size = rnd.nextInt(8) == 0 ? Long.MAX_VALUE - rnd.nextInt(3) : 1 + rnd.nextInt(1 << 28);
        out.add(new TraceEvent(0, t, TraceEvent.Op.ALLOC, id, size, tag, rnd.nextInt(4) == 0 ? !tag.splittableByDefault() : tag.splittableByDefault(), stream, addr, null));
      } else if (kind < 9) {
        long id = live.remove(rnd.nextInt(live.size()));
        out.add(new TraceEvent(0, t, TraceEvent.Op.FREE, id, 0, null, false, stream, addr, null));
      } else {
        long size = rnd.nextBoolean() ? 0 : rnd.nextInt(1 << 24);
        out.add(TraceEvent.annotate(t, ACTIONS[rnd.nextInt(ACTIONS.length)], addr, size, stream));
      }
    }
    return out;
  }

  static byte[] jsonl(List<TraceEvent> events, Map<String, Object> header) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (L1TraceWriter w = new L1TraceWriter(b, header)) {
      for (TraceEvent e : events) {
        w.write(e);
      }
    }
    return b.toByteArray();
  }

  static byte[] binary(EventSource source, Map<String, Object> header, int blockRecords) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    L1BinaryWriter w = new L1BinaryWriter(b, L1TraceWriter.header(header), blockRecords);
    TraceEvent e;
    while ((e = source.next()) != null) {
      w.write(e);
    }
    w.finish();
    return b.toByteArray();
  }

  static Map<String, Object> header(long seed) {
    Map<String, Object> h = new LinkedHashMap<>();
    h.put("format", "kvsim-l1");
    h.put("version", 1);
    h.put("generator", "test");
    h.put("params", Map.of("seed", seed, "note", "a \"quoted\" value", "rate", 2.5));
    return h;
  }

  @Property(tries = 150)
  void l1JsonlToBinaryAndBackIsTheIdentity(@ForAll long seed, @ForAll @IntRange(min = 0, max = 600) int count, @ForAll @IntRange(min = 1, max = 70) int blockRecords)
      throws IOException {
    List<TraceEvent> events = randomEvents(seed, count);
    byte[] jsonl = jsonl(events, header(seed));
    byte[] bin;
    Map<String, Object> readHeader;
    try (L1TraceReader r = L1TraceReader.open("t.jsonl", new ByteArrayInputStream(jsonl))) {
      readHeader = r.header();
      bin = binary(r, r.header(), blockRecords);
    }
    List<TraceEvent> back = new ArrayList<>();
    Map<String, Object> binHeader;
    try (L1BinaryReader r = L1BinaryReader.open("t.kvt", new ByteArrayInputStream(bin))) {
      binHeader = r.header();
      TraceEvent e;
      while ((e = r.next()) != null) {
        assertEquals(back.size() + 1, e.line(), "an event's line is its number");
        back.add(e);
      }
      assertEquals(count, r.eventsRead());
    }
    assertEquals(readHeader, binHeader);
    assertEquals(events.size(), back.size());
    for (int i = 0; i < events.size(); i++) {
      TraceEvent a = events.get(i);
      TraceEvent b = back.get(i);
      assertEquals(new TraceEvent(b.line(), a.timeNanos(), a.op(), a.id(), a.sizeBytes(), a.tag(), a.splittable(), a.stream(), a.addressBytes(), a.action()), b, "event " + i);
    }
    assertArrayEquals(jsonl, jsonl(back, binHeader), "JSONL -> binary -> JSONL gives the same bytes");
  }

  static List<Request> randomRequests(long seed, int count, int hashBlockTokens) {
    Random rnd = new Random(seed);
    List<Request> out = new ArrayList<>();
    long id = rnd.nextBoolean() ? 0 : rnd.nextLong() >>> 3;
    long t = rnd.nextBoolean() ? 0 : rnd.nextLong() >>> 3;
    for (int i = 0; i < count; i++) {
      id += 1 + (rnd.nextInt(4) == 0 ? rnd.nextInt(1 << 20) : 0);
      t += rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(1 << 30);
      int prompt = rnd.nextInt(10) == 0 ? Integer.MAX_VALUE - rnd.nextInt(3) : 1 + rnd.nextInt(20000);
      int output = 1 + rnd.nextInt(rnd.nextInt(10) == 0 ? Integer.MAX_VALUE - 1 : 4000);
      long[] hashes = null;
      if (hashBlockTokens > 0 && rnd.nextInt(4) != 0 && prompt < 1_000_000) {
        hashes = new long[(prompt + hashBlockTokens - 1) / hashBlockTokens];
        long h = rnd.nextInt(3) == 0 ? rnd.nextLong() : rnd.nextInt(1000);
        for (int k = 0; k < hashes.length; k++) {
          h = rnd.nextInt(3) == 0 ? rnd.nextLong() : h + 1;
          hashes[k] = h;
        }
      }
      int n = 1;
      int beam = 1;
      switch (rnd.nextInt(5)) {
        case 0 -> n = 1 + rnd.nextInt(8);
        case 1 -> beam = 1 + rnd.nextInt(8);
        default -> { }
      }
      out.add(new Request(0, id, t, prompt, output, hashes, n, beam));
    }
    return out;
  }

  @Property(tries = 150)
  void requestJsonlToBinaryAndBackIsTheIdentity(
      @ForAll long seed, @ForAll @IntRange(min = 0, max = 300) int count, @ForAll @IntRange(min = 1, max = 40) int blockRecords, @ForAll @IntRange(min = 0, max = 600) int hashBlockTokens)
      throws IOException {
    List<Request> requests = randomRequests(seed, count, hashBlockTokens);
    Map<String, Object> fields = new LinkedHashMap<>();
    fields.put("generator", "test");
    fields.put("seed", seed);
    ByteArrayOutputStream jb = new ByteArrayOutputStream();
    RequestTraceWriter jw = new RequestTraceWriter(jb, fields, hashBlockTokens);
    for (Request r : requests) {
      jw.write(r);
    }
    jw.finish();
    byte[] jsonl = jb.toByteArray();
    ByteArrayOutputStream bb = new ByteArrayOutputStream();
    try (RequestTraceReader r = RequestTraceReader.open("r.jsonl", new ByteArrayInputStream(jsonl))) {
      RequestBinaryWriter bw = new RequestBinaryWriter(bb, r.header(), r.hashBlockTokens(), blockRecords);
      Request q;
      while ((q = r.next()) != null) {
        bw.write(q);
      }
      bw.finish();
    }
    ByteArrayOutputStream back = new ByteArrayOutputStream();
    try (RequestBinaryReader r = RequestBinaryReader.open("r.kvr", new ByteArrayInputStream(bb.toByteArray()))) {
      assertEquals(hashBlockTokens, r.hashBlockTokens());
      RequestTraceWriter w = new RequestTraceWriter(back, r.header(), r.hashBlockTokens());
      int i = 0;
      Request q;
      while ((q = r.next()) != null) {
        Request a = requests.get(i++);
        assertEquals(new Request(i, a.id(), a.arrivalNanos(), a.promptTokens(), a.outputTokens(), a.hashIds(), a.samples(), a.beamWidth()), q, "request " + i);
        w.write(q);
      }
      w.finish();
      assertEquals(count, i);
    }
    assertArrayEquals(jsonl, back.toByteArray(), "JSONL -> binary -> JSONL gives the same bytes");
  }
}
