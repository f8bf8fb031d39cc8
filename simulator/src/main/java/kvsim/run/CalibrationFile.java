package kvsim.run;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import kvsim.alloc.Calibration;
import kvsim.core.InputException;
import kvsim.devicemodel.CostCalibration;
import kvsim.registry.AllocatorRegistry;

/**
 * Reads a calibration file ({@code results/calibration/<gpu>.json}; README, "Calibration files"):
 * costs measured on a real GPU that replace kvsim's defaults, for every run kind. Version 2:
 *
 * <pre>
 * {"format": "kvsim-calibration", "version": 2,
 *  "device": "NVIDIA H100 80GB HBM3", "driver": "580.65.06", "date": "2026-11-23",
 *  "forward": {"compute_efficiency": 0.45, "memory_efficiency": 0.85},
 *  "copies": {"hbm_efficiency": 0.7, "host_link_efficiency": 0.9},
 *  "latency": {"pytorch-caching": {"device_alloc_ns": 41000, "device_free_ns": 33000},
 *              "slab": {"alloc_base_ns": 25}}}
 * </pre>
 *
 * Every section and field is optional; what the file does not give keeps its default. Version 1
 * files (latency only) are read as before. Version 3 ({@code kvsim calibrate} writes it) adds to
 * the {@code forward} section {@code per_sequence_layer_ns}, {@code engine_overhead_ns} and a
 * {@code profile}: a measured per-layer table ({@link kvsim.devicemodel.ProfileTable}: model,
 * device, source, shape and one array per column); a forward section then chooses the run's
 * predictor ({@link CostCalibration}). Version 3 also has {@code cuda} (the CUDA version a GPU
 * calibration ran on) and {@code samples} (its raw measurements, {@code kvsim gpu calibrate}). A version 3 field in a version 1 or 2 file asks for version 3. Unknown fields, unknown allocators, negative latencies
 * and efficiencies outside (0, 1] are errors naming the file, line and field (Note [What a
 * calibration file may hold]).
 *
 * <p>Note [What a calibration file may hold]: every field the reader accepts changes a run; a field
 * accepted and then ignored would read as applied. So {@code fragmentation}, which version 1
 * accepted and ignored, is refused in both versions: a fragmentation comparison measured on a GPU
 * is a result to compare kvsim's with, not a cost, and nothing in a run could use it (it belongs
 * in a result folder beside the run it is compared with). The {@code forward} and {@code copies}
 * sections are version 2's: a version 1 file that gives them is told to say version 2, so that an
 * older kvsim, which reads version 1 only, refuses the file instead of dropping them. An L1 run
 * (replay, compare) times allocator calls only, so there only {@code latency} changes results; the
 * file's other sections are for the serving runs that read the same file. The one exception is
 * version 3's {@code samples} (and {@code cuda}): the raw measurements a GPU calibration's fitted
 * fields came from ({@code kvsim gpu calibrate}), kept so that a reader can check the fit or refit
 * them ({@code --samples FILE}); no run reads them, and that is said in README, "Calibration files".
 * Their shape is still checked, so that a refit never meets a malformed row.
 */
public final class CalibrationFile {
  /** The value of the {@code format} field. */
  public static final String FORMAT = "kvsim-calibration";
  /** The version this reader writes; it reads {@link #VERSION_1} and {@link #VERSION_2} files too. */
  public static final int VERSION = 3;
  /** The second version: adds the forward and copies efficiencies. */
  public static final int VERSION_2 = 2;
  /** The first version: latencies only. */
  public static final int VERSION_1 = 1;
  /** The columns of a version 3 {@code forward.profile}, each an array with one value per token count. */
  static final List<String> PROFILE_COLUMNS = List.of("num_tokens", "linear_ns", "norm_ns", "activation_ns", "elementwise_ns", "emb_ns");
  static final Set<String> PROFILE_FIELDS = Set.of("model", "device", "source", "shape", "num_tokens", "linear_ns", "norm_ns", "activation_ns",
      "elementwise_ns", "emb_ns");

  private static final Set<String> TOP_FIELDS = Set.of("format", "version", "device", "driver", "cuda", "date", "latency", "forward", "copies", "samples");
  /** The top-level fields only version 3 has: a GPU calibration's CUDA version and raw samples (Note [What a calibration file may hold]). */
  private static final List<String> TOP_FIELDS_3 = List.of("cuda", "samples");
  /**
   * The kinds of raw sample a {@code samples} section may hold ({@code kvsim gpu calibrate}), each
   * with the shape fields its rows name besides {@code ns}, the repetitions' times.
   */
  public static final Map<String, List<String>> SAMPLE_KINDS = sampleKinds();
  private static final Set<String> SAMPLE_FIELDS = Set.of("granularity_bytes", "total_bytes", "skipped");

  private static Map<String, List<String>> sampleKinds() {
    Map<String, List<String>> k = new LinkedHashMap<>();
    k.put("alloc", List.of("size_bytes"));
    k.put("free", List.of("size_bytes"));
    k.put("map", List.of("pages", "page_bytes"));
    k.put("unmap", List.of("pages", "page_bytes"));
    k.put("copy_d2d", List.of("size_bytes"));
    k.put("copy_h2d", List.of("size_bytes"));
    k.put("copy_d2h", List.of("size_bytes"));
    k.put("gemm", List.of("tokens", "inner", "outer"));
    return java.util.Collections.unmodifiableMap(k);
  }
  /** A second JSON value and a key given twice are errors, not silently ignored or the last value. */
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  private CalibrationFile() {}

  /** Reads and checks a calibration file. */
  public static Calibration read(Path file) {
    String source = file.toString();
    String text;
    try {
      if (Files.isDirectory(file)) {
        throw new InputException(source + ": is a folder, not a calibration file");
      }
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new InputException(source + ": no such calibration file");
    } catch (java.nio.charset.CharacterCodingException e) {
      throw new InputException(source + ": not UTF-8 text");
    } catch (IOException e) {
      throw new InputException(source + ": cannot read: " + e.getMessage());
    }
    JsonNode root;
    try {
      root = JSON.readTree(text);
    } catch (JsonProcessingException e) {
      long line = e.getLocation() == null ? 0 : e.getLocation().getLineNr();
      String problem = e.getOriginalMessage().startsWith("Trailing token")
          ? "more than one JSON value: the file is one object"
          : "malformed JSON: " + kvsim.core.JsonProblem.plain(e.getOriginalMessage());
      throw InputException.at(source, line, null, problem);
    }
    if (root == null || !root.isObject()) {
      throw InputException.at(source, 1, null, "expected a JSON object");
    }
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (f.equals("fragmentation")) {
        // Note [What a calibration file may hold].
        throw error(source, text, f, "a measured fragmentation comparison is a result, not a cost, and no run reads it;"
            + " keep it beside the results it is compared with");
      }
      if (!TOP_FIELDS.contains(f)) {
        throw error(source, text, f, "unknown field (known: " + new TreeSet<>(TOP_FIELDS) + ")");
      }
    }
    if (!FORMAT.equals(root.path("format").asText(null))) {
      throw error(source, text, "format", "expected \"" + FORMAT + "\" (is this a kvsim calibration file?)");
    }
    int version = root.path("version").isInt() ? root.get("version").asInt() : -1;
    if (version != VERSION && version != VERSION_2 && version != VERSION_1) {
      throw error(source, text, "version", "this kvsim reads versions " + VERSION_1 + ", " + VERSION_2 + " and " + VERSION);
    }
    for (String f : TOP_FIELDS_3) {
      if (version != VERSION && root.has(f)) {
        throw error(source, text, f, "a version " + VERSION + " field: give \"version\": " + VERSION);
      }
    }
    if (root.has("cuda") && !root.get("cuda").isTextual()) {
      throw error(source, text, "cuda", "expected text (a CUDA version such as \"12.6\"), got " + root.get("cuda"));
    }
    if (root.has("samples")) {
      samples(source, text, root.get("samples"));
    }
    for (String section : List.of("forward", "copies")) {
      if (version == VERSION_1 && root.has(section)) {
        throw error(source, text, section, "a version " + VERSION_2 + " section: give \"version\": " + VERSION_2);
      }
    }
    List<String> forwardFields = new java.util.ArrayList<>(CostCalibration.FORWARD_FIELDS);
    if (version == VERSION) {
      forwardFields.addAll(CostCalibration.FORWARD_FIELDS_3);
    }
    JsonNode fwd = root.path("forward");
    if (version != VERSION && fwd.isObject()) {
      for (String f : CostCalibration.FORWARD_FIELDS_3) {
        if (fwd.has(f)) {
          throw error(source, text, "forward." + f, "a version " + VERSION + " field: give \"version\": " + VERSION);
        }
      }
    }
    Map<String, Double> forward = efficiencies(source, text, root, "forward", forwardFields);
    Map<String, Double> copies = efficiencies(source, text, root, "copies", CostCalibration.COPIES_FIELDS);
    Double perSequence = null;
    Long overhead = null;
    kvsim.devicemodel.ProfileTable profile = null;
    if (version == VERSION && fwd.isObject()) {
      if (fwd.has("per_sequence_layer_ns")) {
        JsonNode v = fwd.get("per_sequence_layer_ns");
        if (!v.isNumber() || !(v.asDouble() >= 0) || Double.isInfinite(v.asDouble())) {
          throw error(source, text, "forward.per_sequence_layer_ns", "must be a number of nanoseconds >= 0, got " + v);
        }
        perSequence = v.asDouble();
      }
      if (fwd.has("engine_overhead_ns")) {
        JsonNode v = fwd.get("engine_overhead_ns");
        if (!v.canConvertToExactIntegral() || v.asLong() < 0) {
          throw error(source, text, "forward.engine_overhead_ns", "must be a non-negative whole number of nanoseconds, got " + v);
        }
        overhead = v.asLong();
      }
      if (fwd.has("profile")) {
        profile = profile(source, text, fwd.get("profile"));
      }
    }
    CostCalibration cost = new CostCalibration(forward.get("compute_efficiency"), forward.get("memory_efficiency"), copies.get("hbm_efficiency"),
        copies.get("host_link_efficiency"), perSequence, overhead, profile);
    Map<String, Map<String, Long>> latency = new LinkedHashMap<>();
    JsonNode lat = root.path("latency");
    if (!lat.isMissingNode() && !lat.isObject()) {
      throw error(source, text, "latency", "expected an object of allocator names");
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = lat.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      try {
        AllocatorRegistry.get(e.getKey());
      } catch (InputException unknown) {
        throw error(source, text, "latency." + e.getKey(), unknown.getMessage());
      }
      if (!e.getValue().isObject()) {
        throw error(source, text, "latency." + e.getKey(), "expected an object of latency fields, got " + e.getValue());
      }
      Map<String, Long> fields = new LinkedHashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> f = e.getValue().fields(); f.hasNext(); ) {
        Map.Entry<String, JsonNode> field = f.next();
        String where = "latency." + e.getKey() + "." + field.getKey();
        if (!Calibration.FIELDS.contains(field.getKey())) {
          throw error(source, text, where, "unknown latency field (known: " + new TreeSet<>(Calibration.FIELDS) + ")");
        }
        if (!field.getValue().canConvertToExactIntegral() || field.getValue().asLong() < 0) {
          throw error(source, text, where, "must be a non-negative whole number of nanoseconds, got " + field.getValue());
        }
        fields.put(field.getKey(), field.getValue().asLong());
      }
      latency.put(e.getKey(), fields);
    }
    return new Calibration(
        file.getFileName().toString(), root.path("device").asText(null), root.path("driver").asText(null), root.path("date").asText(null),
        latency, cost);
  }

  /** Checks a version 3 {@code samples} section: raw measurements kept for provenance (Note [What a calibration file may hold]). */
  private static void samples(String source, String text, JsonNode s) {
    if (!s.isObject()) {
      throw error(source, text, "samples", "expected an object of sample kinds " + SAMPLE_KINDS.keySet());
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = s.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String where = "samples." + e.getKey();
      JsonNode v = e.getValue();
      if (e.getKey().equals("granularity_bytes") || e.getKey().equals("total_bytes")) {
        if (!v.canConvertToExactIntegral() || v.asLong() < 0) {
          throw error(source, text, where, "must be a non-negative whole number of bytes, got " + v);
        }
        continue;
      }
      if (e.getKey().equals("skipped")) {
        if (!v.isObject()) {
          throw error(source, text, where, "expected an object of sample kinds, each with the reason it was not measured");
        }
        for (Iterator<Map.Entry<String, JsonNode>> k = v.fields(); k.hasNext(); ) {
          Map.Entry<String, JsonNode> skip = k.next();
          if (!SAMPLE_KINDS.containsKey(skip.getKey()) || !skip.getValue().isTextual()) {
            throw error(source, text, where + "." + skip.getKey(), "expected a sample kind " + SAMPLE_KINDS.keySet() + " with a reason as text");
          }
        }
        continue;
      }
      List<String> shape = SAMPLE_KINDS.get(e.getKey());
      if (shape == null) {
        Set<String> known = new TreeSet<>(SAMPLE_KINDS.keySet());
        known.addAll(SAMPLE_FIELDS);
        throw error(source, text, where, "unknown field (known: " + known + ")");
      }
      if (!v.isArray()) {
        throw error(source, text, where, "expected an array of rows, each with " + shape + " and ns");
      }
      for (int i = 0; i < v.size(); i++) {
        JsonNode row = v.get(i);
        String at = where + "[" + i + "]";
        Set<String> fields = new TreeSet<>(shape);
        fields.add("ns");
        if (!row.isObject() || row.size() != fields.size()) {
          throw error(source, text, where, "row " + i + ": expected exactly " + fields + ", got " + row);
        }
        for (String f : shape) {
          JsonNode x = row.path(f);
          if (!x.canConvertToExactIntegral() || x.asLong() <= 0) {
            throw error(source, text, where, "row " + i + ": " + f + " must be a positive whole number, got " + (x.isMissingNode() ? "nothing" : x));
          }
        }
        JsonNode ns = row.path("ns");
        if (!ns.isArray() || ns.isEmpty()) {
          throw error(source, text, where, "row " + i + " (" + at + "): ns must be a non-empty array of nanoseconds");
        }
        for (JsonNode t : ns) {
          if (!t.canConvertToExactIntegral() || t.asLong() < 0) {
            throw error(source, text, where, "row " + i + ": ns must hold non-negative whole numbers of nanoseconds, got " + t);
          }
        }
      }
    }
  }

  /** Reads a section of efficiencies, each a number in (0, 1]; empty when the section is absent. */
  private static Map<String, Double> efficiencies(String source, String text, JsonNode root, String section, List<String> fields) {
    Map<String, Double> out = new LinkedHashMap<>();
    JsonNode node = root.path(section);
    if (node.isMissingNode()) {
      return out;
    }
    if (!node.isObject()) {
      throw error(source, text, section, "expected an object of the fields " + fields);
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> field = it.next();
      String where = section + "." + field.getKey();
      if (!fields.contains(field.getKey())) {
        throw error(source, text, where, "unknown field (known: " + String.join(", ", fields) + ")");
      }
      if (CostCalibration.FORWARD_FIELDS_3.contains(field.getKey())) {
        continue;
      }
      JsonNode v = field.getValue();
      if (!v.isNumber() || !(v.asDouble() > 0 && v.asDouble() <= 1)) {
        throw error(source, text, where, "must be a share in (0, 1], got " + v);
      }
      out.put(field.getKey(), v.asDouble());
    }
    return out;
  }

  /** Reads a version 3 {@code forward.profile}: a derived per-layer table ({@link kvsim.devicemodel.ProfileTable}). */
  private static kvsim.devicemodel.ProfileTable profile(String source, String text, JsonNode p) {
    if (!p.isObject()) {
      throw error(source, text, "forward.profile", "expected an object with model, device, source, shape and the columns " + PROFILE_COLUMNS);
    }
    for (Iterator<String> it = p.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!PROFILE_FIELDS.contains(f)) {
        throw error(source, text, "forward.profile." + f, "unknown field (known: " + new TreeSet<>(PROFILE_FIELDS) + ")");
      }
    }
    for (String f : PROFILE_FIELDS) {
      if (!p.has(f)) {
        throw error(source, text, "forward.profile", "missing " + f);
      }
    }
    for (String f : List.of("model", "device", "source")) {
      if (!p.get(f).isTextual()) {
        throw error(source, text, "forward.profile." + f, "expected text, got " + p.get(f));
      }
    }
    String model = p.get("model").asText();
    try {
      kvsim.core.ModelPreset.parse(model);
    } catch (IllegalArgumentException e) {
      throw error(source, text, "forward.profile.model", e.getMessage());
    }
    JsonNode sh = p.get("shape");
    int[] dims = new int[4];
    String[] names = {"n_head", "n_kv_head", "n_embd", "n_expanded_embd"};
    for (int i = 0; i < names.length; i++) {
      JsonNode v = sh.path(names[i]);
      if (!v.canConvertToExactIntegral() || v.asLong() <= 0 || v.asLong() > Integer.MAX_VALUE) {
        throw error(source, text, "forward.profile.shape." + names[i], "must be a positive whole number, got " + (v.isMissingNode() ? "nothing" : v));
      }
      dims[i] = v.asInt();
    }
    if (!sh.path("use_gated_mlp").isBoolean()) {
      throw error(source, text, "forward.profile.shape.use_gated_mlp", "must be true or false");
    }
    if (sh.size() != 5) {
      throw error(source, text, "forward.profile.shape", "expected exactly n_head, n_kv_head, n_embd, n_expanded_embd and use_gated_mlp");
    }
    int n = p.get("num_tokens").isArray() ? p.get("num_tokens").size() : -1;
    long[] tokens = new long[Math.max(n, 0)];
    double[][] nanos = new double[5][tokens.length];
    for (int c = 0; c < PROFILE_COLUMNS.size(); c++) {
      String col = PROFILE_COLUMNS.get(c);
      JsonNode a = p.get(col);
      if (!a.isArray() || a.size() != n || n == 0) {
        throw error(source, text, "forward.profile." + col, "expected an array of one number per token count (" + Math.max(n, 0) + ")");
      }
      for (int i = 0; i < n; i++) {
        JsonNode v = a.get(i);
        if (c == 0) {
          if (!v.canConvertToExactIntegral() || v.asLong() <= 0 || (i > 0 && v.asLong() <= tokens[i - 1])) {
            throw error(source, text, "forward.profile.num_tokens", "must be positive whole numbers, increasing; element " + i + " is " + v);
          }
          tokens[i] = v.asLong();
        } else {
          if (!v.isNumber() || !(v.asDouble() >= 0) || Double.isInfinite(v.asDouble())) {
            throw error(source, text, "forward.profile." + col, "must be finite numbers of nanoseconds >= 0; element " + i + " is " + v);
          }
          nanos[c - 1][i] = v.asDouble();
        }
      }
    }
    return new kvsim.devicemodel.ProfileTable(model, p.get("device").asText(), p.get("source").asText(),
        new kvsim.devicemodel.ProfileTable.Shape(dims[0], dims[1], dims[2], dims[3], sh.get("use_gated_mlp").asBoolean()), tokens, nanos);
  }

  /**
   * Returns a version 3 calibration file's text for a fitted profile: the device it was measured on,
   * and a forward section with the efficiencies fitted on it, the two terms and the table
   * ({@code kvsim calibrate}).
   */
  public static String write(kvsim.devicemodel.ProfileTable table, kvsim.devicemodel.ProfileFit.Efficiencies fit, kvsim.devicemodel.EngineTerms terms,
      String device) {
    StringBuilder b = new StringBuilder();
    b.append("{\"format\": \"").append(FORMAT).append("\", \"version\": ").append(VERSION).append(",\n");
    b.append(" \"device\": ").append(quote(device)).append(",\n");
    b.append(" \"forward\": {\"compute_efficiency\": ").append(fit.compute()).append(", \"memory_efficiency\": ").append(fit.memory()).append(",\n");
    b.append("             \"per_sequence_layer_ns\": ").append(terms.perSequenceLayerNanos()).append(", \"engine_overhead_ns\": ")
        .append(terms.engineOverheadNanos()).append(",\n");
    b.append("             \"profile\": {\"model\": ").append(quote(table.model())).append(", \"device\": ").append(quote(table.device()))
        .append(", \"source\": ").append(quote(table.source())).append(",\n");
    kvsim.devicemodel.ProfileTable.Shape s = table.shape();
    b.append("               \"shape\": {\"n_head\": ").append(s.heads()).append(", \"n_kv_head\": ").append(s.kvHeads()).append(", \"n_embd\": ")
        .append(s.hiddenSize()).append(", \"n_expanded_embd\": ").append(s.intermediateSize()).append(", \"use_gated_mlp\": ").append(s.gatedMlp()).append("},\n");
    b.append("               \"num_tokens\": ").append(java.util.Arrays.toString(table.tokens()));
    kvsim.devicemodel.ProfileTable.OpKind[] kinds = kvsim.devicemodel.ProfileTable.OpKind.values();
    for (int k = 0; k < kinds.length; k++) {
      b.append(",\n               \"").append(PROFILE_COLUMNS.get(k + 1)).append("\": [");
      for (int i = 0; i < table.tokens().length; i++) {
        double v = table.measured(kinds[k], i);
        b.append(i == 0 ? "" : ", ").append(v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v));
      }
      b.append(']');
    }
    b.append("}}}\n");
    return b.toString();
  }

  private static String quote(String s) {
    try {
      return JSON.writeValueAsString(s);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** An error at the line where {@code field}'s last key is written. */
  private static InputException error(String source, String text, String field, String problem) {
    String key = "\"" + field.substring(field.lastIndexOf('.') + 1) + "\"";
    int at = text.indexOf(key);
    long line = at < 0 ? 0 : 1 + text.substring(0, at).chars().filter(c -> c == '\n').count();
    return InputException.at(source, line, field, problem);
  }
}
