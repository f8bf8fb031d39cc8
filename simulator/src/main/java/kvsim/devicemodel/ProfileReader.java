package kvsim.devicemodel;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;

/**
 * Reads a per-operation GPU profile in the format Vidur publishes ({@code mlp.csv}: microsoft/vidur,
 * {@code data/profiling/compute/<device>/<model>/mlp.csv}) into a {@link ProfileTable}: one row per
 * token count and tensor-parallel degree, the model's shape, and per operation of one layer
 * {@code time_stats.<op>.{min,max,mean,median,std}} in milliseconds. kvsim keeps the medians of
 * the rows at tensor-parallel degree 1 (its serving runs use one GPU); rows at other degrees are
 * read and checked like the others and counted in {@link Result#otherDegreeRows}, not used.
 *
 * <p>Every problem is an InputException naming the file, line and column: a missing column, a row
 * with too few or too many fields, a field that is not a number, a negative or non-finite time, a
 * token count or degree that is not a positive whole number, a token count given twice at one
 * degree, a shape that changes between rows or is not the shape of the model the profile is read
 * for, and a profile without rows at degree 1 (Note [Repeated profile rows]).
 *
 * <p>Note [Repeated profile rows]: the published profiles measure some token counts twice (Vidur's
 * profiler lists 2048 and 4096 tokens, and for Llama-3-8B 16384 and 32768, both in its regular
 * steps and among its powers of two), so two rows at one token count and degree are two
 * measurements of the same thing, not a contradiction: kvsim takes the mean of their medians and
 * reports how many rows it merged so ({@link Result#repeatedRows}); nothing is dropped.
 */
public final class ProfileReader {
  /** The operations of one layer, in the profile's names, with the kind each counts as. */
  public static final Map<String, ProfileTable.OpKind> OPERATIONS = operations();
  /** The shape columns the profile must state. */
  static final List<String> SHAPE_COLUMNS = List.of("n_head", "n_kv_head", "n_embd", "n_expanded_embd", "use_gated_mlp");

  private static Map<String, ProfileTable.OpKind> operations() {
    Map<String, ProfileTable.OpKind> m = new java.util.LinkedHashMap<>();
    m.put("emb", ProfileTable.OpKind.EMBEDDING);
    m.put("input_layernorm", ProfileTable.OpKind.NORM);
    m.put("attn_pre_proj", ProfileTable.OpKind.LINEAR);
    m.put("attn_rope", ProfileTable.OpKind.ELEMENTWISE);
    m.put("attn_post_proj", ProfileTable.OpKind.LINEAR);
    m.put("post_attention_layernorm", ProfileTable.OpKind.NORM);
    m.put("mlp_up_proj", ProfileTable.OpKind.LINEAR);
    m.put("mlp_act", ProfileTable.OpKind.ACTIVATION);
    m.put("mlp_down_proj", ProfileTable.OpKind.LINEAR);
    m.put("add", ProfileTable.OpKind.ELEMENTWISE);
    return java.util.Collections.unmodifiableMap(m);
  }

  /**
   * What a profile holds.
   *
   * @param table the medians at tensor-parallel degree 1, summed per operation kind
   * @param operationNanos per operation (the profile's names), its median at each of the table's token counts, in nanoseconds
   * @param otherDegreeRows rows at other tensor-parallel degrees (checked, not used)
   * @param repeatedRows rows at degree 1 whose token count an earlier row measured too, merged into it (Note [Repeated profile rows])
   */
  public record Result(ProfileTable table, Map<String, double[]> operationNanos, int otherDegreeRows, int repeatedRows) {}

  private ProfileReader() {}

  /**
   * Reads {@code path} (an {@code mlp.csv}, or a folder holding one) as the profile of {@code model}
   * on {@code device}; {@code source} is what a run's summary names as its source.
   */
  public static Result read(Path path, ModelPreset model, DeviceSpec device, String source) {
    Path file = Files.isDirectory(path) ? path.resolve("mlp.csv") : path;
    String name = file.toString();
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new InputException(name + ": no such profile" + (Files.isDirectory(path) ? " (the folder holds no mlp.csv)" : ""));
    } catch (java.nio.charset.CharacterCodingException e) {
      throw new InputException(name + ": not UTF-8 text");
    } catch (IOException e) {
      throw new InputException(name + ": cannot read: " + e.getMessage());
    }
    if (lines.isEmpty() || lines.get(0).isBlank()) {
      throw InputException.at(name, 1, null, "empty: expected a header of Vidur's mlp.csv columns");
    }
    String[] header = lines.get(0).split(",", -1);
    Map<String, Integer> col = new HashMap<>();
    for (int i = 0; i < header.length; i++) {
      if (col.put(header[i].trim(), i) != null) {
        throw InputException.at(name, 1, header[i].trim(), "column given twice");
      }
    }
    List<String> required = new ArrayList<>(List.of("num_tokens", "num_tensor_parallel_workers"));
    required.addAll(SHAPE_COLUMNS);
    for (String op : OPERATIONS.keySet()) {
      required.add(median(op));
    }
    for (String c : required) {
      if (!col.containsKey(c)) {
        throw InputException.at(name, 1, c, "missing column (a Vidur mlp.csv has num_tokens, num_tensor_parallel_workers, the shape and time_stats.<op>.median)");
      }
    }
    TreeMap<Long, double[]> byTokens = new TreeMap<>();
    Map<Long, Integer> measurements = new HashMap<>();
    int other = 0;
    int repeated = 0;
    ProfileTable.Shape shape = null;
    for (int n = 2; n <= lines.size(); n++) {
      String line = lines.get(n - 1);
      if (line.isBlank()) {
        continue;
      }
      String[] f = line.split(",", -1);
      if (f.length != header.length) {
        throw InputException.at(name, n, null, "expected " + header.length + " fields as in the header, got " + f.length);
      }
      long tokens = whole(f, col, "num_tokens", name, n);
      long degree = whole(f, col, "num_tensor_parallel_workers", name, n);
      ProfileTable.Shape rowShape = new ProfileTable.Shape((int) whole(f, col, "n_head", name, n), (int) whole(f, col, "n_kv_head", name, n),
          (int) whole(f, col, "n_embd", name, n), (int) whole(f, col, "n_expanded_embd", name, n), bool(f, col, "use_gated_mlp", name, n));
      if (shape == null) {
        shape = rowShape;
        checkShape(shape, model, name, n);
      } else if (!shape.equals(rowShape)) {
        throw InputException.at(name, n, "n_embd", "the model's shape changes between rows (" + shape.text() + ", then " + rowShape.text() + ")");
      }
      double[] times = new double[OPERATIONS.size()];
      int k = 0;
      for (String op : OPERATIONS.keySet()) {
        String c = median(op);
        double ms = number(f, col, c, name, n);
        if (!(ms >= 0) || Double.isInfinite(ms)) {
          throw InputException.at(name, n, c, "a time must be a finite number of milliseconds >= 0, got " + f[col.get(c)].trim());
        }
        // To a tenth of a nanosecond: the profile gives microseconds at best, and a table written and read back is then the same table.
        times[k++] = Math.round(ms * 1e7) / 10.0;
      }
      if (degree != 1) {
        other++;
        continue;
      }
      double[] earlier = byTokens.get(tokens);
      if (earlier == null) {
        byTokens.put(tokens, times);
        measurements.put(tokens, 1);
      } else {
        // Note [Repeated profile rows]: a running mean of the measurements' medians.
        int m = measurements.merge(tokens, 1, Integer::sum);
        for (int j = 0; j < times.length; j++) {
          earlier[j] = Math.round((earlier[j] + (times[j] - earlier[j]) / m) * 10) / 10.0;
        }
        repeated++;
      }
    }
    if (byTokens.isEmpty()) {
      throw new InputException(name + ": no rows at num_tensor_parallel_workers 1 (kvsim times one GPU)");
    }
    long[] tokens = new long[byTokens.size()];
    double[][] kinds = new double[ProfileTable.OpKind.values().length][tokens.length];
    Map<String, double[]> perOp = new java.util.LinkedHashMap<>();
    for (String op : OPERATIONS.keySet()) {
      perOp.put(op, new double[tokens.length]);
    }
    int i = 0;
    for (Map.Entry<Long, double[]> e : byTokens.entrySet()) {
      tokens[i] = e.getKey();
      int k = 0;
      for (Map.Entry<String, ProfileTable.OpKind> op : OPERATIONS.entrySet()) {
        double t = e.getValue()[k++];
        kinds[op.getValue().ordinal()][i] += t;
        perOp.get(op.getKey())[i] = t;
      }
      i++;
    }
    return new Result(new ProfileTable(model.name(), device.name(), source, shape, tokens, kinds), perOp, other, repeated);
  }

  private static String median(String op) {
    return "time_stats." + op + ".median";
  }

  /** The profile must be of the model it is read for: its width, MLP width and heads. */
  private static void checkShape(ProfileTable.Shape s, ModelPreset model, String name, long line) {
    int heads = model.hiddenSize() / model.headDim();
    String[][] checks = {
      {"n_embd", Integer.toString(s.hiddenSize()), Integer.toString(model.hiddenSize())},
      {"n_expanded_embd", Integer.toString(s.intermediateSize()), Integer.toString(model.intermediateSize())},
      {"n_head", Integer.toString(s.heads()), Integer.toString(heads)},
      {"n_kv_head", Integer.toString(s.kvHeads()), Integer.toString(model.kvHeads())},
    };
    for (String[] c : checks) {
      if (!c[1].equals(c[2])) {
        throw InputException.at(name, line, c[0], c[1] + " is not " + model.name() + "'s " + c[2] + ": a profile of another model (give its --model)");
      }
    }
  }

  private static String field(String[] f, Map<String, Integer> col, String c, String name, long line) {
    String v = f[col.get(c)].trim();
    if (v.isEmpty()) {
      throw InputException.at(name, line, c, "empty");
    }
    return v;
  }

  private static double number(String[] f, Map<String, Integer> col, String c, String name, long line) {
    String v = field(f, col, c, name, line);
    try {
      return Double.parseDouble(v);
    } catch (NumberFormatException e) {
      throw InputException.at(name, line, c, "not a number: '" + v + "'");
    }
  }

  private static long whole(String[] f, Map<String, Integer> col, String c, String name, long line) {
    double v = number(f, col, c, name, line);
    if (!(v >= 1) || v != Math.rint(v) || v > Integer.MAX_VALUE) {
      throw InputException.at(name, line, c, "must be a positive whole number, got " + f[col.get(c)].trim());
    }
    return (long) v;
  }

  private static boolean bool(String[] f, Map<String, Integer> col, String c, String name, long line) {
    String v = field(f, col, c, name, line);
    if (v.equalsIgnoreCase("true") || v.equals("1")) {
      return true;
    }
    if (v.equalsIgnoreCase("false") || v.equals("0")) {
      return false;
    }
    throw InputException.at(name, line, c, "must be True or False, got '" + v + "'");
  }
}
