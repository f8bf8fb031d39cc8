package kvsim.torch;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import net.razorvine.pickle.Unpickler;

/**
 * Reads a {@code _dump_snapshot} pickle (PyTorch's {@code torch/cuda/memory.py} @00b65a0; a
 * standard Python pickle, protocol 4 in every file seen) safely: the opcode stream is checked by
 * {@link PickleScanner} first, then {@code net.razorvine:pickle} builds plain maps and lists, which
 * are turned into a {@link TorchSnapshot} with every field checked. Problems are {@link
 * InputException}s naming the file and the field ({@code segments[3].blocks[2].size}).
 *
 * <ul>
 *   <li>Top level: a dict with {@code segments} and {@code device_traces} (and optionally {@code
 *       allocator_settings}), or a bare list of segments ({@code torch.cuda.memory_snapshot()}).
 *   <li>Integers may arrive as Integer, Long or BigInteger; all are read as long.
 *   <li>Blocks without an {@code address} (older files) get the segment address plus the sizes of
 *       the blocks before them.
 *   <li>Stack frames, {@code history}, {@code compile_context}, {@code user_metadata} are ignored.
 * </ul>
 */
public final class SnapshotReader {
  /** Files larger than this are refused (the largest real snapshots are a few tens of MB). */
  public static final long MAX_FILE_BYTES = 1L << 30;

  private final String source;

  private SnapshotReader(String source) {
    this.source = source;
  }

  /** Reads and checks a snapshot file. */
  public static TorchSnapshot read(Path file) throws IOException {
    String source = file.toString();
    byte[] data;
    if (Files.isDirectory(file)) {
      throw new InputException(source + ": is a folder, not a snapshot file (a .pickle written by torch.cuda.memory._dump_snapshot)");
    }
    try {
      long size = Files.size(file);
      if (size > MAX_FILE_BYTES) {
        throw new InputException(source + ": " + size + " bytes is more than a snapshot can sensibly be (limit " + MAX_FILE_BYTES + ")");
      }
      data = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new InputException(source + ": no such file");
    }
    return read(source, data);
  }

  /** Reads and checks a snapshot held in memory; {@code source} names it in messages. */
  public static TorchSnapshot read(String source, byte[] data) {
    try {
      PickleScanner.scan(data);
    } catch (PickleScanner.Refused e) {
      throw new InputException(source + ": " + e.getMessage());
    }
    Object root;
    try {
      root = new Unpickler().loads(data);
    } catch (IOException | RuntimeException e) {
      String problem = e instanceof ClassCastException
          ? "a value of the wrong type where the pickle builds a container (" + kvsim.core.JsonProblem.javaTypes(String.valueOf(e.getMessage()))
              .replaceAll("^class (\\w+) cannot be cast to class (\\w+).*$", "a $1 used as a $2") + ")"
          : kvsim.core.JsonProblem.javaTypes(String.valueOf(e.getMessage()));
      throw new InputException(source + ": not a readable pickle: " + problem);
    }
    return new SnapshotReader(source).convert(root);
  }

  private TorchSnapshot convert(Object root) {
    List<?> segments;
    List<List<TorchSnapshot.Entry>> traces = new ArrayList<>();
    Map<String, Object> settings = Map.of();
    if (root instanceof Map<?, ?> m) {
      segments = list(m.get("segments"), "segments");
      Object dt = m.get("device_traces");
      if (dt != null) {
        List<?> devices = list(dt, "device_traces");
        for (int d = 0; d < devices.size(); d++) {
          List<?> entries = list(devices.get(d), "device_traces[" + d + "]");
          List<TorchSnapshot.Entry> out = new ArrayList<>(entries.size());
          for (int i = 0; i < entries.size(); i++) {
            out.add(entry(map(entries.get(i), "device_traces[" + d + "][" + i + "]"), "device_traces[" + d + "][" + i + "]"));
          }
          traces.add(Collections.unmodifiableList(out));
        }
      }
      Object as = m.get("allocator_settings");
      if (as != null) {
        Map<String, Object> s = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map(as, "allocator_settings").entrySet()) {
          s.put(String.valueOf(e.getKey()), e.getValue());
        }
        settings = Collections.unmodifiableMap(s);
      }
    } else if (root instanceof List<?> l) {
      segments = l;
    } else {
      throw new InputException(source + ": not a memory snapshot: the pickle holds " + describe(root) + ", expected a dict with 'segments'");
    }
    List<TorchSnapshot.Segment> segs = new ArrayList<>(segments.size());
    for (int i = 0; i < segments.size(); i++) {
      segs.add(segment(map(segments.get(i), "segments[" + i + "]"), "segments[" + i + "]"));
    }
    return new TorchSnapshot(source, Collections.unmodifiableList(segs), Collections.unmodifiableList(traces), settings);
  }

  private TorchSnapshot.Segment segment(Map<?, ?> m, String where) {
    long address = number(m, "address", where);
    long total = number(m, "total_size", where);
    List<?> blocks = list(m.get("blocks"), where + ".blocks");
    List<TorchSnapshot.Block> out = new ArrayList<>(blocks.size());
    long cursor = address;
    for (int i = 0; i < blocks.size(); i++) {
      String bw = where + ".blocks[" + i + "]";
      Map<?, ?> b = map(blocks.get(i), bw);
      long size = number(b, "size", bw);
      long addr = b.containsKey("address") ? number(b, "address", bw) : cursor;
      if (addr != cursor || size <= 0) {
        throw new InputException(source + ": " + bw + ": blocks do not tile the segment (block at " + addr + ", size " + size + ", expected address " + cursor + ")");
      }
      cursor += size;
      String state = string(b, "state", bw);
      if (!state.equals("active_allocated") && !state.equals("active_pending_free") && !state.equals("active_awaiting_free") && !state.equals("inactive")) {
        throw new InputException(source + ": " + bw + ".state: unknown block state '" + state + "'");
      }
      long requested = b.containsKey("requested_size") ? number(b, "requested_size", bw) : size;
      out.add(new TorchSnapshot.Block(addr, size, requested, state.equals("active_awaiting_free") ? "active_pending_free" : state));
    }
    if (cursor != address + total) {
      throw new InputException(source + ": " + where + ": blocks cover " + (cursor - address) + " of the segment's " + total + " bytes");
    }
    String type = string(m, "segment_type", where);
    if (!type.equals("small") && !type.equals("large")) {
      throw new InputException(source + ": " + where + ".segment_type: expected small or large, got '" + type + "'");
    }
    Object exp = m.get("is_expandable");
    return new TorchSnapshot.Segment(
        (int) (m.containsKey("device") ? number(m, "device", where) : 0),
        address,
        total,
        m.containsKey("allocated_size") ? number(m, "allocated_size", where) : 0,
        m.containsKey("active_size") ? number(m, "active_size", where) : 0,
        m.containsKey("requested_size") ? number(m, "requested_size", where) : 0,
        m.containsKey("stream") ? number(m, "stream", where) : 0,
        type,
        Boolean.TRUE.equals(exp),
        Collections.unmodifiableList(out));
  }

  private TorchSnapshot.Entry entry(Map<?, ?> m, String where) {
    String action = string(m, "action", where);
    long addr = m.get("addr") == null ? 0 : number(m, "addr", where);
    long size = m.get("size") == null ? 0 : number(m, "size", where);
    long stream = m.get("stream") == null ? 0 : number(m, "stream", where);
    long time = m.get("time_us") == null ? -1 : number(m, "time_us", where);
    long deviceFree = m.get("device_free") == null ? -1 : number(m, "device_free", where);
    return new TorchSnapshot.Entry(action.intern(), addr, size, stream, time, deviceFree);
  }

  private long number(Map<?, ?> m, String key, String where) {
    Object v = m.get(key);
    if (v == null) {
      throw new InputException(source + ": " + where + ": missing '" + key + "'");
    }
    if (v instanceof Integer || v instanceof Long) {
      return ((Number) v).longValue();
    }
    if (v instanceof BigInteger b) {
      if (b.bitLength() < 64) {
        return b.longValue();
      }
      if (b.signum() > 0 && b.bitLength() == 64) {
        return b.longValue(); // an unsigned 64-bit value (a stream handle): keep its bits
      }
      throw new InputException(source + ": " + where + "." + key + ": integer out of range: " + b);
    }
    if (v instanceof Boolean bool) {
      return bool ? 1 : 0;
    }
    throw new InputException(source + ": " + where + "." + key + ": expected an integer, got " + describe(v));
  }

  private String string(Map<?, ?> m, String key, String where) {
    Object v = m.get(key);
    if (v == null) {
      throw new InputException(source + ": " + where + ": missing '" + key + "'");
    }
    if (!(v instanceof String s)) {
      throw new InputException(source + ": " + where + "." + key + ": expected a string, got " + describe(v));
    }
    return s;
  }

  private List<?> list(Object v, String where) {
    if (v == null) {
      throw new InputException(source + ": missing '" + where + "'");
    }
    if (v instanceof List<?> l) {
      return l;
    }
    if (v instanceof Object[] a) {
      return java.util.Arrays.asList(a);
    }
    throw new InputException(source + ": " + where + ": expected a list, got " + describe(v));
  }

  private Map<?, ?> map(Object v, String where) {
    if (v instanceof Map<?, ?> m) {
      return m;
    }
    throw new InputException(source + ": " + where + ": expected a dict, got " + describe(v));
  }

  private static String describe(Object v) {
    if (v == null) {
      return "None";
    }
    if (v instanceof Map) {
      return "a dict";
    }
    if (v instanceof List) {
      return "a list";
    }
    if (v instanceof String s) {
      return "the string '" + (s.length() > 40 ? s.substring(0, 40) + "…" : s) + "'";
    }
    return "a " + v.getClass().getSimpleName();
  }
}
