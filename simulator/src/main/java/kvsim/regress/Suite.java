package kvsim.regress;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.config.Origin;
import kvsim.config.ServingSettings;
import kvsim.config.Setting;
import kvsim.config.Settings;
import kvsim.core.InputException;
import kvsim.registry.AllocatorRegistry;
import kvsim.registry.WorkloadRegistry;
import kvsim.report.ResultsReader;
import kvsim.serving.ServingSystems;

/**
 * A regression suite ({@code workloads/regress/*.yaml}): scenarios, each an allocator-level (L1)
 * workload on listed allocators or a serving workload on listed serving systems, and the metrics to
 * watch in each, with the direction that is better and a tolerance. The suite's name is its file
 * name without {@code .yaml}; its baselines live in {@code BASELINES/<name>/<scenario>.json}.
 *
 * <pre>
 * version: 1                       # the suite's version, recorded in its baselines
 * watch:                           # default watch lists, by kind; a scenario's own list replaces them
 *   allocators:
 *     - {metric: oom_count, better: lower}
 *     - {metric: modelled_allocator_nanos, better: lower, tolerance: 2%}
 *   serving:
 *     - {metric: ttft_seconds.p90, better: lower}
 * scenarios:
 *   - name: churn-5000
 *     workload: churn:ops=5000,seed=1      # generator spec, or an L1 trace relative to this file
 *     allocators: [first-fit, paged]
 *     options: {first-fit: {alignment: 512}}
 *   - name: serving-small
 *     serving: requests:preset=sharegpt,count=100,rate=2
 *     systems: [vllm, orca-max]
 *     model: opt-13b
 *     kv-memory: 12GiB                 # any setting a suite accepts (ServingSettings), by name or alias
 *     calibration: ../../results/calibration/h100.json   # optional, either kind; relative to this file
 * </pre>
 *
 * Metrics are named as in the result files ({@code results/SCHEMA.md}): an L1 run's counters
 * ({@code oom_count}), gauges with their statistic ({@code external_fragmentation.peak}; the
 * {@code metrics.} prefix may be left out) and {@code extra.NAME}; a serving system's fields
 * ({@code preemptions}, {@code ttft_seconds.p90}, {@code kv_breakdown.token_states.mean}).
 * Tolerances and their defaults: {@link Tolerance}.
 */
public final class Suite {
  /** The two kinds of scenario. */
  public enum Kind {
    /** An L1 workload on allocators. */
    ALLOCATORS("allocators"),
    /** A request workload on serving systems. */
    SERVING("serving");

    private final String key;

    Kind(String key) {
      this.key = key;
    }

    /** Returns the kind as the suite and the baselines name it. */
    public String key() {
      return key;
    }
  }

  /** Which way a watched metric is better. */
  public enum Better {
    LOWER,
    HIGHER
  }

  /**
   * A watched metric.
   *
   * @param metric its name in the result files' terms
   * @param better which way is better
   * @param tolerance how far it may move unnoticed
   * @param source the suite file
   * @param line the line of its {@code metric:} field
   * @param field the path of its {@code metric:} field ({@code watch.allocators[2].metric})
   */
  public record Watch(String metric, Better better, Tolerance tolerance, String source, int line, String field) {
    /** Returns an error at this watch entry's metric: {@code file:line: field: problem}. */
    public InputException error(String problem) {
      return InputException.at(source, line, field, problem);
    }
  }

  private static final Set<String> TOP = Set.of("version", "watch", "scenarios");
  private static final String TOP_TEXT = "version, watch, scenarios";
  private static final Set<String> WATCH = Set.of("metric", "better", "tolerance");
  private static final Set<String> L1_FIELDS =
      new LinkedHashSet<>(List.of("name", "workload", "allocators", "device", "model", "weights", "activations", "options", "torch-alloc-conf",
          "calibration", "watch"));
  /** A serving scenario's fields: its own, then every setting a suite accepts ({@link ServingSettings}), by name or alias. */
  private static final Set<String> SERVING_FIELDS = servingFields();
  private static final String SERVING_FIELDS_TEXT = "name, serving, systems, " + ServingSettings.keys(Setting.Level.SUITE) + " (or an alias), watch";

  private static Set<String> servingFields() {
    Set<String> fields = new LinkedHashSet<>(List.of("name", "serving", "systems", "watch"));
    for (Setting s : ServingSettings.at(Setting.Level.SUITE)) {
      fields.add(s.key());
      fields.addAll(s.aliases());
    }
    return fields;
  }

  private final String name;
  private final String source;
  private final int version;
  private final List<Scenario> scenarios;

  private Suite(String name, String source, int version, List<Scenario> scenarios) {
    this.name = name;
    this.source = source;
    this.version = version;
    this.scenarios = List.copyOf(scenarios);
  }

  /** Returns the suite's name: its file name without the extension. */
  public String name() {
    return name;
  }

  /** Returns the suite file as the user named it. */
  public String source() {
    return source;
  }

  /** Returns the suite's version ({@code version:}), recorded in its baselines. */
  public int version() {
    return version;
  }

  /** Returns the scenarios, in file order. */
  public List<Scenario> scenarios() {
    return scenarios;
  }

  /** Returns the scenario of this name; an InputException naming the known ones otherwise. */
  public Scenario scenario(String scenarioName) {
    for (Scenario s : scenarios) {
      if (s.name().equals(scenarioName)) {
        return s;
      }
    }
    throw new InputException("--scenario " + scenarioName + ": no such scenario in " + source + " (known: "
        + String.join(", ", scenarios.stream().map(Scenario::name).toList()) + ")");
  }

  /** Reads and checks a suite file; every problem is an InputException with file, line and field. */
  public static Suite read(Path file) {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new InputException(file + ": no such file");
    } catch (java.nio.charset.CharacterCodingException e) {
      throw new InputException(file + ": not UTF-8 text");
    } catch (IOException e) {
      throw new InputException(file + ": cannot read: " + e.getMessage());
    }
    String stem = file.getFileName().toString().replaceAll("\\.ya?ml$", "");
    if (!stem.matches("[A-Za-z0-9._-]+")) {
      throw new InputException(file + ": a suite's file name names its baseline folder; use letters, digits, '.', '_' and '-' only");
    }
    YamlNode root = YamlNode.parse(file.toString(), text).mapping(TOP, TOP_TEXT);
    int version = root.require("version").positiveInt();
    Map<Kind, List<Watch>> defaults = new LinkedHashMap<>();
    YamlNode watch = root.get("watch");
    if (watch != null) {
      watch.mapping(Set.of("allocators", "serving"), "allocators, serving");
      for (Kind k : Kind.values()) {
        YamlNode list = watch.get(k.key());
        if (list != null) {
          defaults.put(k, watchList(list));
        }
      }
    }
    List<Scenario> scenarios = new ArrayList<>();
    Set<String> names = new LinkedHashSet<>();
    List<YamlNode> elements = root.require("scenarios").elements();
    if (elements.isEmpty()) {
      throw root.require("scenarios").error("no scenarios");
    }
    Path dir = file.toAbsolutePath().getParent();
    for (YamlNode s : elements) {
      Scenario sc = scenario(s, defaults, dir);
      if (!names.add(sc.name())) {
        throw s.require("name").error("'" + sc.name() + "' given twice; scenario names are unique");
      }
      scenarios.add(sc);
    }
    return new Suite(stem, file.toString(), version, scenarios);
  }

  private static Scenario scenario(YamlNode s, Map<Kind, List<Watch>> defaults, Path dir) {
    Kind kind = s.get("serving") != null ? Kind.SERVING : Kind.ALLOCATORS;
    if (kind == Kind.SERVING && s.get("workload") != null) {
      throw s.require("workload").error("a scenario has either workload: (an L1 workload on allocators) or serving: (requests on serving systems), not both");
    }
    Set<String> fields = kind == Kind.SERVING ? SERVING_FIELDS : L1_FIELDS;
    s.mapping(fields, kind == Kind.SERVING ? SERVING_FIELDS_TEXT : String.join(", ", fields));
    String name = s.require("name").text();
    if (!name.matches("[A-Za-z0-9._-]+")) {
      throw s.require("name").error("a scenario's name names its baseline file; use letters, digits, '.', '_' and '-' only, found '" + name + "'");
    }
    YamlNode workloadNode = s.require(kind == Kind.SERVING ? "serving" : "workload");
    if (workloadNode.text().indexOf('\0') >= 0 || !StandardCharsets.UTF_8.newEncoder().canEncode(workloadNode.text())) {
      throw workloadNode.error("cannot be a file name: it holds a NUL or a lone UTF-16 surrogate");
    }
    String workload = resolvePath(workloadNode.text(), kind, dir);
    YamlNode runsNode = s.require(kind == Kind.SERVING ? "systems" : "allocators");
    List<String> runs = new ArrayList<>();
    for (YamlNode r : runsNode.elements()) {
      String run = r.text();
      try {
        if (kind == Kind.SERVING) {
          ServingSystems.get(run);
        } else {
          AllocatorRegistry.get(run);
        }
      } catch (InputException e) {
        throw r.error(e.getMessage());
      }
      if (runs.contains(run)) {
        throw r.error("'" + run + "' given twice");
      }
      runs.add(run);
    }
    if (runs.isEmpty()) {
      throw runsNode.error("no " + kind.key() + " to run");
    }
    YamlNode conf = s.get("torch-alloc-conf");
    if (conf != null && !runs.contains("pytorch-caching")) {
      throw conf.error("applies to pytorch-caching, which the scenario does not run " + runs);
    }
    List<Watch> watch;
    YamlNode own = s.get("watch");
    if (own != null) {
      watch = watchList(own);
    } else if (defaults.containsKey(kind)) {
      watch = defaults.get(kind);
    } else {
      throw s.error("no metrics to watch: give the scenario a watch: list, or the suite a watch: " + kind.key() + ": list");
    }
    YamlNode cal = s.get("calibration");
    String calibration = cal == null ? null : dir.resolve(cal.text()).normalize().toString();
    return new Scenario(name, kind, s, workload, runs, watch, calibration, digest(s, kind, workload, runs, watch, calibration),
        kind == Kind.SERVING ? settings(s) : Settings.none());
  }

  /**
   * Returns a serving scenario's settings, each parsed by its setting at its field's line; a
   * setting given twice (by its name and an alias) is refused there.
   */
  private static Settings settings(YamlNode s) {
    Settings settings = Settings.none();
    for (String key : s.keys()) {
      Setting setting = ServingSettings.find(key);
      if (setting != null) {
        YamlNode n = s.get(key);
        if (n == null) {
          throw InputException.at(s.source(), s.line(), s.field() + "." + key, "a value is needed");
        }
        settings = settings.and(setting, n.text(), Origin.at(n.source(), n.line(), n.field()));
      }
    }
    return settings;
  }

  /** A trace path is relative to the suite file; generator and importer specs stay as written. */
  private static String resolvePath(String workload, Kind kind, Path dir) {
    String head = workload.split(":", 2)[0];
    boolean named =
        kind == Kind.SERVING
            ? WorkloadRegistry.requestGenerators().containsKey(head) || WorkloadRegistry.requestImporters().containsKey(head)
            : WorkloadRegistry.generators().containsKey(head);
    return named || Path.of(workload).isAbsolute() ? workload : dir.resolve(workload).normalize().toString();
  }

  private static List<Watch> watchList(YamlNode list) {
    List<Watch> out = new ArrayList<>();
    Set<String> seen = new LinkedHashSet<>();
    for (YamlNode w : list.elements()) {
      w.mapping(WATCH, "metric, better, tolerance");
      YamlNode m = w.require("metric");
      String metric = m.text();
      if (!metric.matches("[A-Za-z0-9_.]+") || metric.startsWith(".") || metric.endsWith(".") || metric.contains("..")) {
        throw m.error("expected a metric name such as oom_count or external_fragmentation.peak, found '" + metric + "'");
      }
      if (!seen.add(metric)) {
        throw m.error("'" + metric + "' watched twice");
      }
      YamlNode b = w.require("better");
      Better better =
          switch (b.text()) {
            case "lower" -> Better.LOWER;
            case "higher" -> Better.HIGHER;
            default -> throw b.error("expected lower or higher, found '" + b.text() + "'");
          };
      YamlNode t = w.get("tolerance");
      Tolerance tolerance;
      try {
        tolerance = t == null ? Tolerance.defaultFor(metric) : Tolerance.parse(t.text());
      } catch (IllegalArgumentException e) {
        throw t.error(e.getMessage());
      }
      out.add(new Watch(metric, better, tolerance, m.source(), m.line(), m.field()));
    }
    if (out.isEmpty()) {
      throw list.error("no metrics to watch");
    }
    return out;
  }

  /**
   * Note [Scenario digest]: a baseline is compared only with the scenario it was recorded for. The
   * digest covers everything that decides the watched values: the scenario's fields as parsed
   * (workload, runs, device, model, plan, options, serving limits), the watched metrics' names, the
   * summary format and version they are read from, and, for a trace file and a calibration file,
   * their content. It leaves
   * out the watch list's directions and tolerances, which decide verdicts, not values; changing
   * those needs no new baselines. A {@code --set} on the command line is a what-if against the
   * recorded baseline and never enters the digest.
   */
  private static String digest(YamlNode s, Kind kind, String workload, List<String> runs, List<Watch> watch, String calibration) {
    ObjectMapper canonical = new ObjectMapper().enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);
    ObjectNode fields = ((ObjectNode) s.tree()).deepCopy();
    fields.remove("watch");
    Map<String, Object> input = new LinkedHashMap<>();
    input.put("kind", kind.key());
    input.put("scenario", canonical.convertValue(fields, Map.class));
    input.put("runs", runs);
    input.put("metrics", watch.stream().map(Watch::metric).toList());
    input.put("summary_format", (kind == Kind.SERVING ? ResultsReader.SERVING_FORMAT : ResultsReader.RUN_FORMAT) + "/" + ResultsReader.VERSION);
    Path trace = Path.of(workload);
    if (Files.isRegularFile(trace)) {
      input.put("trace_sha256", sha256(trace, s.require(kind == Kind.SERVING ? "serving" : "workload")));
    }
    // Only where given, so that the digests of scenarios without one stay as they were.
    if (calibration != null && Files.isRegularFile(Path.of(calibration))) {
      input.put("calibration_sha256", sha256(Path.of(calibration), s.require("calibration")));
    }
    try {
      return "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(canonical.writeValueAsBytes(input)));
    } catch (IOException | NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String sha256(Path file, YamlNode at) {
    try (InputStream in = new DigestInputStream(Files.newInputStream(file), MessageDigest.getInstance("SHA-256"))) {
      in.transferTo(java.io.OutputStream.nullOutputStream());
      return HexFormat.of().formatHex(((DigestInputStream) in).getMessageDigest().digest());
    } catch (IOException e) {
      throw at.error("cannot read " + file + ": " + e.getMessage());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** One scenario of a suite. */
  public static final class Scenario {
    private final String name;
    private final Kind kind;
    private final YamlNode node;
    private final String workload;
    private final List<String> runs;
    private final List<Watch> watch;
    private final String calibration;
    private final String digest;
    private final Settings settings;

    private Scenario(String name, Kind kind, YamlNode node, String workload, List<String> runs, List<Watch> watch, String calibration, String digest,
        Settings settings) {
      this.name = name;
      this.kind = kind;
      this.node = node;
      this.workload = workload;
      this.runs = List.copyOf(runs);
      this.watch = List.copyOf(watch);
      this.calibration = calibration;
      this.digest = digest;
      this.settings = settings;
    }

    /** Returns a serving scenario's settings, each with its line ({@link ServingSettings}); none for an L1 scenario. */
    public Settings settings() {
      return settings;
    }

    /** Returns the calibration file ({@code calibration:}) resolved against the suite's folder, or null for none. */
    public String calibration() {
      return calibration;
    }

    /** Returns the scenario's name, unique in its suite. */
    public String name() {
      return name;
    }

    /** Returns whether it runs allocators or serving systems. */
    public Kind kind() {
      return kind;
    }

    /** Returns the workload: a generator spec, or a trace path resolved against the suite's folder. */
    public String workload() {
      return workload;
    }

    /** Returns the allocators or systems it runs, in the order given. */
    public List<String> runs() {
      return runs;
    }

    /** Returns the watched metrics, in the order given. */
    public List<Watch> watch() {
      return watch;
    }

    /** Returns the digest its baselines must carry (Note [Scenario digest]). */
    public String digest() {
      return digest;
    }

    /** Returns a field's text, or null when absent. */
    String text(String field) {
      YamlNode n = node.get(field);
      return n == null ? null : n.text();
    }

    /** Returns a field's node, or null when absent. */
    YamlNode field(String field) {
      return node.get(field);
    }

    /** Returns the scenario's own node, to report problems at its line. */
    YamlNode node() {
      return node;
    }
  }
}
