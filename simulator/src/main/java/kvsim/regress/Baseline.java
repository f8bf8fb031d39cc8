package kvsim.regress;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.AtomicFiles;
import kvsim.core.InputException;
import kvsim.report.ResultsWriter;

/**
 * A scenario's baseline: the watched metrics' values per allocator or system, as a run recorded
 * them, in {@code BASELINES/<suite>/<scenario>.json} (format {@value #FORMAT}, version {@value
 * #VERSION}; {@code results/SCHEMA.md}).
 *
 * <p>Note [Compatible baselines]: a baseline is compared only when all of these hold, and is
 * otherwise refused (exit status 2) with a message that says to record it again with {@code
 * --update}:
 *
 * <ul>
 *   <li>its {@code format} and {@code version} are this file format's;
 *   <li>its {@code kvsim_version} has the running kvsim's major and minor version (a patch release
 *       keeps baselines; a minor release may change what models compute or what a metric means);
 *   <li>its {@code suite} and {@code scenario} name this scenario, and its {@code suite_version}
 *       is the suite file's {@code version:};
 *   <li>its {@code scenario_digest} is the scenario's (Note [Scenario digest] in {@link Suite}):
 *       same workload, runs, options, device, model, limits, trace content and watched metrics.
 * </ul>
 *
 * @param kvsimVersion the kvsim version that recorded it
 * @param suite the suite's name
 * @param suiteVersion the suite's version
 * @param scenario the scenario's name
 * @param kind allocators or serving
 * @param digest the scenario's digest when recorded
 * @param values per run, per metric, a Number, or null where undefined
 */
public record Baseline(
    String kvsimVersion, String suite, int suiteVersion, String scenario, String kind, String digest, Map<String, Map<String, Object>> values) {
  /** The format marker. */
  public static final String FORMAT = "kvsim-baseline";
  /** The format version this kvsim reads and writes. */
  public static final int VERSION = 1;

  private static final List<String> FIELDS =
      List.of("format", "version", "kvsim_version", "suite", "suite_version", "scenario", "kind", "scenario_digest", "runs");

  /** Returns the file of a scenario's baseline under a suite's baseline folder. */
  public static Path file(Path suiteDir, String scenario) {
    return suiteDir.resolve(scenario + ".json");
  }

  /** Returns the file's tree, fields in the order of the format. */
  Map<String, Object> toTree() {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("format", FORMAT);
    root.put("version", VERSION);
    root.put("kvsim_version", kvsimVersion);
    root.put("suite", suite);
    root.put("suite_version", suiteVersion);
    root.put("scenario", scenario);
    root.put("kind", kind);
    root.put("scenario_digest", digest);
    List<Object> runs = new ArrayList<>();
    for (Map.Entry<String, Map<String, Object>> e : values.entrySet()) {
      Map<String, Object> run = new LinkedHashMap<>();
      run.put("name", e.getKey());
      run.put("metrics", e.getValue());
      runs.add(run);
    }
    root.put("runs", runs);
    return root;
  }

  /** Writes the baseline as its file ({@link #file}) under a suite's baseline folder, atomically; {@link #read(Path)} gives it back. */
  public Path write(Path suiteDir) throws IOException {
    Path f = file(suiteDir, scenario);
    AtomicFiles.write(f, out -> {
      ResultsWriter.json().writeValue(out, toTree());
      out.write('\n');
    });
    return f;
  }

  /**
   * Reads a baseline file on its own, without its suite: the format and version, no unknown field,
   * the names as strings, {@code suite_version} an integer, and each run a distinct {@code name}
   * with {@code metrics} of numbers or null (whole numbers read as {@code Long}, others as {@code
   * Double}). Any problem is an InputException naming the file and the field. What {@link #write}
   * wrote reads back equal.
   */
  public static Baseline read(Path file) {
    return parse(file, "", file + ": no such baseline file");
  }

  /**
   * Reads a scenario's baseline ({@link #read(Path)}) and checks that it may be compared with the
   * scenario (Note [Compatible baselines]); any problem is an InputException naming the file and
   * the field.
   *
   * @param update the command that records baselines again, quoted in messages
   */
  static Baseline read(Path file, Suite suite, Suite.Scenario scenario, String kvsimVersion, String update) {
    String fix = "; record it again with '" + update + "'";
    Baseline b = parse(file, fix, file + ": no baseline for scenario " + scenario.name() + " of suite " + suite.name() + "; record one with '" + update + "'");
    b.checkComparable(file, suite, scenario, kvsimVersion, fix);
    return b;
  }

  private static Baseline parse(Path file, String fix, String missing) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(Files.readString(file));
    } catch (NoSuchFileException e) {
      throw new InputException(missing);
    } catch (JsonProcessingException e) {
      long line = e.getLocation() == null ? 0 : e.getLocation().getLineNr();
      throw InputException.at(file.toString(), line, null, "not valid JSON (" + e.getOriginalMessage().split("\n")[0] + ")" + fix);
    } catch (IOException e) {
      throw new InputException(file + ": cannot read: " + e.getMessage());
    }
    if (root == null || !root.isObject()) {
      throw InputException.at(file.toString(), 1, null, "not a kvsim baseline (expected a JSON object)" + fix);
    }
    String format = root.path("format").asText(null);
    if (!FORMAT.equals(format)) {
      throw InputException.at(file.toString(), 0, "format", "expected \"" + FORMAT + "\", found " + root.path("format") + fix);
    }
    if (!root.path("version").isInt() || root.get("version").asInt() != VERSION) {
      throw InputException.at(file.toString(), 0, "version", "baseline format version " + root.path("version") + "; this kvsim reads version " + VERSION + fix);
    }
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        throw InputException.at(file.toString(), 0, f, "unknown field (known: " + String.join(", ", FIELDS) + ")" + fix);
      }
    }
    String recordedBy = text(root, "kvsim_version", file, fix);
    String suite = text(root, "suite", file, fix);
    if (!root.path("suite_version").isInt()) {
      throw InputException.at(file.toString(), 0, "suite_version", "expected an integer, found " + root.path("suite_version") + fix);
    }
    int suiteVersion = root.get("suite_version").asInt();
    String scenario = text(root, "scenario", file, fix);
    String kind = text(root, "kind", file, fix);
    String digest = text(root, "scenario_digest", file, fix);
    Map<String, Map<String, Object>> values = new LinkedHashMap<>();
    JsonNode runs = root.path("runs");
    if (!runs.isArray()) {
      throw InputException.at(file.toString(), 0, "runs", "expected a list" + fix);
    }
    for (int i = 0; i < runs.size(); i++) {
      String at = "runs[" + i + "]";
      JsonNode run = runs.get(i);
      if (!run.isObject()) {
        throw InputException.at(file.toString(), 0, at, "expected an object" + fix);
      }
      String name = text(run, "name", file, fix);
      if (values.containsKey(name)) {
        throw InputException.at(file.toString(), 0, at + ".name", "'" + name + "' appears twice" + fix);
      }
      JsonNode metrics = run.path("metrics");
      if (!metrics.isObject()) {
        throw InputException.at(file.toString(), 0, at + ".metrics", "expected an object" + fix);
      }
      Map<String, Object> m = new LinkedHashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = metrics.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        JsonNode v = e.getValue();
        if (!(v.isNumber() || v.isNull())) {
          throw InputException.at(file.toString(), 0, at + ".metrics." + e.getKey(), "not a number" + fix);
        }
        m.put(e.getKey(), v.isNull() ? null : v.canConvertToLong() && v.isIntegralNumber() ? (Object) v.longValue() : (Object) v.doubleValue());
      }
      values.put(name, java.util.Collections.unmodifiableMap(m));
    }
    return new Baseline(recordedBy, suite, suiteVersion, scenario, kind, digest, java.util.Collections.unmodifiableMap(values));
  }

  /** Checks Note [Compatible baselines] against the scenario, and that every run has every watched metric. */
  private void checkComparable(Path file, Suite s, Suite.Scenario sc, String runningVersion, String fix) {
    if (!majorMinor(kvsimVersion).equals(majorMinor(runningVersion))) {
      throw InputException.at(file.toString(), 0, "kvsim_version",
          "recorded by kvsim " + kvsimVersion + ", incompatible with kvsim " + runningVersion + " (baselines carry over only within a minor version)" + fix);
    }
    expect("suite", suite, s.name(), file, fix);
    if (suiteVersion != s.version()) {
      throw InputException.at(file.toString(), 0, "suite_version",
          "recorded for version " + suiteVersion + " of suite " + s.name() + ", which is now version " + s.version() + fix);
    }
    expect("scenario", scenario, sc.name(), file, fix);
    expect("kind", kind, sc.kind().key(), file, fix);
    if (!sc.digest().equals(digest)) {
      throw InputException.at(file.toString(), 0, "scenario_digest",
          "scenario " + sc.name() + " has changed since this baseline was recorded (its workload, " + sc.kind().key()
              + ", options or watched metrics)" + fix);
    }
    int i = 0;
    for (Map<String, Object> m : values.values()) {
      for (Suite.Watch w : sc.watch()) {
        if (!m.containsKey(w.metric())) {
          throw InputException.at(file.toString(), 0, "runs[" + i + "].metrics." + w.metric(), "missing" + fix);
        }
      }
      i++;
    }
    if (!List.copyOf(values.keySet()).equals(sc.runs())) {
      throw InputException.at(file.toString(), 0, "runs", "holds " + values.keySet() + ", the scenario runs " + sc.runs() + fix);
    }
  }

  private static void expect(String field, String found, String expected, Path file, String fix) {
    if (!found.equals(expected)) {
      throw InputException.at(file.toString(), 0, field, "expected '" + expected + "', found '" + found + "'" + fix);
    }
  }

  private static String text(JsonNode node, String field, Path file, String fix) {
    JsonNode v = node.get(field);
    if (v == null || !v.isTextual()) {
      throw InputException.at(file.toString(), 0, field, "missing or not a string" + fix);
    }
    return v.asText();
  }

  /** Returns {@code major.minor} of a version such as {@code 0.1.0} or {@code 0.2.0-SNAPSHOT}. */
  static String majorMinor(String version) {
    String[] parts = version.split("[.-]");
    return parts.length >= 2 ? parts[0] + "." + parts[1] : version;
  }
}
