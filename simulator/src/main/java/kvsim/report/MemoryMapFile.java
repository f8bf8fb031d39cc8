package kvsim.report;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.core.AtomicFiles;
import kvsim.core.InputException;
import kvsim.metrics.MemoryMap;

/**
 * Writes and reads {@code memory-map.json}, the memory maps of a run's allocators ({@link
 * MemoryMap}; format {@value #FORMAT}, version {@value ResultsReader#VERSION}, results/SCHEMA.md).
 * The file is one line of compact JSON: it holds up to a few thousand rectangles per allocator.
 * Reading is strict as for the other result files (Note [Strict reading] on {@link ResultsReader}).
 */
public final class MemoryMapFile {
  /** The file's name in a run's result folder. */
  public static final String FILE = "memory-map.json";
  /** Its {@code format} marker. */
  public static final String FORMAT = "kvsim-memory-map";

  private static final ObjectMapper COMPACT = new ObjectMapper().registerModule(kvsim.core.PlainNumbers.MODULE);
  private static final Set<String> FIELDS = Set.of(
      "allocator", "events", "address_min_bytes", "address_max_bytes", "max_rectangles", "rectangles_seen", "min_area_byte_events",
      "tags", "rectangles", "bin_events", "elided_mean_bytes", "oom_counts", "snapshot_at_oom");
  private static final Set<String> OOM_FIELDS = Set.of("event", "time_ns", "size_bytes", "reason", "file");

  private MemoryMapFile() {}

  /** Writes the maps into {@code dir/memory-map.json}. */
  public static void write(Path dir, List<MemoryMap> maps) throws IOException {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("format", FORMAT);
    root.put("version", ResultsReader.VERSION);
    List<Object> list = new ArrayList<>();
    for (MemoryMap m : maps) {
      Map<String, Object> a = new LinkedHashMap<>();
      a.put("allocator", m.allocator());
      a.put("events", m.events());
      a.put("address_min_bytes", m.addressMinBytes());
      a.put("address_max_bytes", m.addressMaxBytes());
      a.put("max_rectangles", m.maxRectangles());
      a.put("rectangles_seen", m.rectanglesSeen());
      a.put("min_area_byte_events", m.minAreaByteEvents());
      a.put("tags", m.tags());
      List<long[]> rects = new ArrayList<>();
      for (MemoryMap.Rectangle r : m.rectangles()) {
        rects.add(new long[] {r.addressBytes(), r.sizeBytes(), r.startEvent(), r.endEvent(), r.tagIndex()});
      }
      a.put("rectangles", rects);
      a.put("bin_events", m.binEvents());
      a.put("elided_mean_bytes", m.elidedMeanBytes());
      a.put("oom_counts", m.oomCounts());
      if (m.oomSnapshot() != null) {
        // Only with --snapshot-at-oom: other folders' files are unchanged.
        MemoryMap.OomSnapshot o = m.oomSnapshot();
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("event", o.event());
        s.put("time_ns", o.timeNanos());
        s.put("size_bytes", o.sizeBytes());
        s.put("reason", o.reason());
        s.put("file", o.file());
        a.put("snapshot_at_oom", s);
      }
      list.add(a);
    }
    root.put("allocators", list);
    byte[] bytes = COMPACT.writeValueAsBytes(root);
    AtomicFiles.write(dir.resolve(FILE), out -> {
      out.write(bytes);
      out.write('\n');
    });
  }

  /** Returns whether {@code dir} holds a memory map (folders written before it existed do not). */
  public static boolean exists(Path dir) {
    return Files.isRegularFile(dir.resolve(FILE));
  }

  /** Reads {@code dir/memory-map.json}. */
  public static List<MemoryMap> read(Path dir) {
    Path file = dir.resolve(FILE);
    String src = file.toString();
    JsonNode root;
    try (InputStream in = Files.newInputStream(file)) {
      root = COMPACT.readTree(in);
    } catch (JsonProcessingException e) {
      throw InputException.at(src, e.getLocation() == null ? 0 : e.getLocation().getLineNr(), null, "not valid JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw InputException.at(src, 0, null, "cannot read: " + e.getMessage());
    }
    if (root == null || !root.isObject()) {
      throw InputException.at(src, 0, null, "expected a JSON object");
    }
    if (!FORMAT.equals(root.path("format").asText(null))) {
      throw InputException.at(src, 0, "format", "expected \"" + FORMAT + "\", found " + root.get("format"));
    }
    if (!root.path("version").isInt() || root.get("version").intValue() != ResultsReader.VERSION) {
      throw InputException.at(src, 0, "version", root.get("version") + " is not supported; this kvsim reads version " + ResultsReader.VERSION);
    }
    only(src, root, "", Set.of("format", "version", "allocators"));
    JsonNode allocs = root.get("allocators");
    if (allocs == null || !allocs.isArray()) {
      throw InputException.at(src, 0, "allocators", "expected an array");
    }
    List<MemoryMap> out = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < allocs.size(); i++) {
      String at = "allocators[" + i + "]";
      JsonNode a = allocs.get(i);
      if (!a.isObject()) {
        throw InputException.at(src, 0, at, "expected an object");
      }
      only(src, a, at, FIELDS);
      String name = a.path("allocator").asText("");
      if (name.isEmpty() || !seen.add(name)) {
        throw InputException.at(src, 0, at + ".allocator", "expected a unique non-empty name, found " + a.get("allocator"));
      }
      long events = count(src, a.get("events"), at + ".events");
      long min = count(src, a.get("address_min_bytes"), at + ".address_min_bytes");
      long max = count(src, a.get("address_max_bytes"), at + ".address_max_bytes");
      long maxRects = count(src, a.get("max_rectangles"), at + ".max_rectangles");
      long seenRects = count(src, a.get("rectangles_seen"), at + ".rectangles_seen");
      JsonNode area = a.get("min_area_byte_events");
      if (area == null || !area.isNumber() || area.doubleValue() < 0) {
        throw InputException.at(src, 0, at + ".min_area_byte_events", "expected a non-negative number, found " + area);
      }
      List<String> tags = new ArrayList<>();
      for (JsonNode t : array(src, a.get("tags"), at + ".tags")) {
        if (!t.isTextual()) {
          throw InputException.at(src, 0, at + ".tags", "expected strings, found " + t);
        }
        tags.add(t.textValue());
      }
      List<MemoryMap.Rectangle> rects = new ArrayList<>();
      JsonNode rs = array(src, a.get("rectangles"), at + ".rectangles");
      for (int k = 0; k < rs.size(); k++) {
        String rAt = at + ".rectangles[" + k + "]";
        JsonNode r = rs.get(k);
        if (!r.isArray() || r.size() != 5) {
          throw InputException.at(src, 0, rAt, "expected [address_bytes, size_bytes, start_event, end_event, tag_index], found " + r);
        }
        long tag = count(src, r.get(4), rAt + "[4]");
        if (tag >= tags.size()) {
          throw InputException.at(src, 0, rAt + "[4]", "tag index " + tag + " is not below the " + tags.size() + " tags");
        }
        long startEvent = count(src, r.get(2), rAt + "[2]");
        long endEvent = count(src, r.get(3), rAt + "[3]");
        if (endEvent <= startEvent) {
          throw InputException.at(src, 0, rAt + "[3]", "end event " + endEvent + " is not after the start event " + startEvent);
        }
        rects.add(new MemoryMap.Rectangle(count(src, r.get(0), rAt + "[0]"), count(src, r.get(1), rAt + "[1]"), startEvent, endEvent, (int) tag));
      }
      long binEvents = count(src, a.get("bin_events"), at + ".bin_events");
      if (binEvents < 1) {
        throw InputException.at(src, 0, at + ".bin_events", "expected a positive integer, found " + binEvents);
      }
      long[] elided = counts(src, a.get("elided_mean_bytes"), at + ".elided_mean_bytes");
      long[] ooms = counts(src, a.get("oom_counts"), at + ".oom_counts");
      if (maxRects > Integer.MAX_VALUE) {
        throw InputException.at(src, 0, at + ".max_rectangles", "too large: " + maxRects);
      }
      out.add(new MemoryMap(name, events, min, max, (int) maxRects, seenRects, area.doubleValue(), List.copyOf(tags), List.copyOf(rects),
          binEvents, elided, ooms, oomSnapshot(src, a.get("snapshot_at_oom"), at + ".snapshot_at_oom", events)));
    }
    return out;
  }

  private static MemoryMap.OomSnapshot oomSnapshot(String src, JsonNode n, String at, long events) {
    if (n == null) {
      return null;
    }
    if (!n.isObject()) {
      throw InputException.at(src, 0, at, "expected an object, found " + n);
    }
    only(src, n, at, OOM_FIELDS);
    long event = count(src, n.get("event"), at + ".event");
    if (event < 1 || event > events) {
      throw InputException.at(src, 0, at + ".event", "event " + event + " is not one of the run's events 1.." + events);
    }
    for (String f : List.of("reason", "file")) {
      if (n.get(f) == null || !n.get(f).isTextual() || n.get(f).textValue().isEmpty()) {
        throw InputException.at(src, 0, at + "." + f, "expected a non-empty string, found " + n.get(f));
      }
    }
    return new MemoryMap.OomSnapshot(event, count(src, n.get("time_ns"), at + ".time_ns"), count(src, n.get("size_bytes"), at + ".size_bytes"),
        n.get("reason").textValue(), n.get("file").textValue());
  }

  private static void only(String src, JsonNode o, String at, Set<String> allowed) {
    for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
      String k = it.next();
      if (!allowed.contains(k)) {
        throw InputException.at(src, 0, at.isEmpty() ? k : at + "." + k, "not a field of format version " + ResultsReader.VERSION);
      }
    }
  }

  private static JsonNode array(String src, JsonNode n, String field) {
    if (n == null || !n.isArray()) {
      throw InputException.at(src, 0, field, "expected an array, found " + n);
    }
    return n;
  }

  private static long count(String src, JsonNode n, String field) {
    if (n == null || !n.isIntegralNumber() || !n.canConvertToLong() || n.longValue() < 0) {
      throw InputException.at(src, 0, field, "expected a non-negative integer, found " + n);
    }
    return n.longValue();
  }

  private static long[] counts(String src, JsonNode n, String field) {
    JsonNode a = array(src, n, field);
    long[] out = new long[a.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = count(src, a.get(i), field + "[" + i + "]");
    }
    return out;
  }
}
