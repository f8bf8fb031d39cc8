package kvsim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The layering of {@code simulator/ARCHITECTURE.md} ("Layers": dependencies point one way, from the
 * CLI down to the value types), checked on the sources, as two rules.
 *
 * <p>Rule 1, packages: every reference from a main package to another kvsim package (an import, or
 * a fully qualified name in code; comments and string literals do not count) must be on the
 * referring package's allowed list. The base lists, with which the packages were first laid out:
 *
 * <ul>
 *   <li>core → nothing of kvsim; devicemodel → core; config → core; metrics → core; trace → core.
 *   <li>workload → trace, config, core.
 *   <li>alloc → devicemodel, metrics, core; alloc.support → alloc, devicemodel, metrics, core.
 *   <li>each allocator family alloc.&lt;family&gt; → alloc, alloc.support, devicemodel, metrics, core, and
 *       never another family.
 *   <li>engine → alloc, trace, devicemodel, metrics, config, core; report → metrics, config, core.
 *   <li>registry → alloc and every alloc.* package, workload, trace; cli → anything.
 * </ul>
 *
 * <p>What our code needs beyond that list, each justified at its entry in {@link #MAY_USE} and
 * {@link #REGISTRY_MAY_USE}: workload → devicemodel; registry → devicemodel, core; and the packages
 * the base lists do not name: run, torch, blocks, serving, spark and regress.
 *
 * <p>Rule 2, the registry alone names concrete classes: a concrete class of an allocator family
 * (its models, drivers and managers, found by scanning the family's sources: see {@link
 * #concreteClassIn}) may be named only in its own family and in {@code kvsim.registry}, by import,
 * static import, wildcard import or fully qualified name. Everyone else, the composition root
 * {@code cli} included, uses the interfaces and value types of the family (records, enums,
 * settings, statistics, exceptions) and gets instances from the registry.
 *
 * <p>A sub-package follows the rule of the package it sits in ({@code engine.queue} is {@code
 * engine}); a package outside the list fails the test until a rule is added for it. Listed
 * packages that do not exist yet are simply not found.
 */
class PackageDependencyTest {

  private static final Set<String> FAMILY_MAY_USE = Set.of("alloc", "alloc.support", "devicemodel", "metrics", "core");
  /** Besides alloc and every alloc.* package, which {@link #forbidden} allows. */
  private static final Set<String> REGISTRY_MAY_USE =
      Set.of(
          "workload",
          "trace",
          // Extra: the workload registry opens a generator for a model and a device (DeviceSpec).
          "devicemodel",
          // Extra: InputException for unknown names, Bytes to quote models' defaults in descriptions.
          "core");
  private static final Map<String, Set<String>> MAY_USE =
      Map.ofEntries(
          Map.entry("core", Set.of()),
          Map.entry("devicemodel", Set.of("core")),
          Map.entry("config", Set.of("core")),
          Map.entry("metrics", Set.of("core")),
          Map.entry("trace", Set.of("core")),
          // Extra: devicemodel, because the kv generator's default decode step is the device's
          // roofline time to read the weights (DeviceSpec's HBM bandwidth).
          Map.entry("workload", Set.of("trace", "config", "core", "devicemodel")),
          Map.entry("alloc", Set.of("devicemodel", "metrics", "core")),
          Map.entry("alloc.support", Set.of("alloc", "devicemodel", "metrics", "core")),
          Map.entry("engine", Set.of("alloc", "trace", "devicemodel", "metrics", "config", "core")),
          Map.entry("report", Set.of("metrics", "config", "core")),
          // Beyond the base lists: the run library under cli, which resolves a run specification
          // (workload, device, memory plan, models by registry name) and runs it on the engine, or
          // a serving run on the serving engine, and gives a capacity search's answers as report's
          // typed results (report.CapacityResults), which the result folder holds.
          Map.entry("run", Set.of("engine", "serving", "registry", "alloc", "trace", "devicemodel", "metrics", "config", "core", "report")),
          // Beyond the base lists: PyTorch snapshot import, inspection, recording and replay. It
          // reads the caching family's value types and model interface, gets the model from the
          // registry, writes L1 traces and reports a snapshot's fragmentation as runs do (metrics).
          Map.entry("torch", Set.of("alloc", "alloc.caching", "registry", "trace", "metrics", "core")),
          // Beyond the base lists (the L2 engine): schedulers and KV managers on the event core. It
          // drives vLLM's block manager through its interface (alloc.paged), got from the registry.
          Map.entry("serving", Set.of("engine", "registry", "alloc", "alloc.paged", "trace", "devicemodel", "metrics", "core")),
          // Beyond the base lists: script mode of vLLM's block manager, which it gets from the
          // registry. submit and step run vLLM v1's scheduler, which lives in serving
          // (ScriptedServing drives VllmV1Scheduler over PagedKvManager), rather than a second copy
          // of it here.
          Map.entry("blocks", Set.of("alloc.paged", "registry", "serving", "core")),
          // Beyond the base lists: the Apache Spark engine of `kvsim sweep` (src/spark/java, built
          // by the spark profile); it runs grid cells through the run library, as the local engine
          // does.
          Map.entry("spark", Set.of("run", "config", "core")),
          // Beyond the base lists: `kvsim tune`, the settings search. It runs its cells on the sweep
          // engine and capacity searches of the run library, stores cells and writes its folder
          // through report (SweepTable's cell store, TuneResults), checks pytorch-caching's conf
          // values with that family's value type (TorchAllocConf) and reads serving settings.
          Map.entry("tune", Set.of("run", "report", "alloc.caching", "config", "core")),
          // Beyond the base lists: the CI regression gate. It runs suites with the run library,
          // names allocators and serving systems by registry name (checking them against the
          // registry and serving's system table), reads result formats' names from report and
          // writes its tables through report and its baseline folders through report's
          // ResultFolder. It reads a serving scenario's settings with config's table of settings.
          Map.entry("regress", Set.of("run", "registry", "serving", "report", "config", "core")),
          // Beyond the base lists: the GPU-validation mode (its device layer gpu.device on CUDA's
          // driver API, the replay planner, calibration). It replays L1 traces as runs do (the run
          // library, the registry's models, the trace readers, PyTorch snapshots), writes result
          // folders through report and calibration files in devicemodel's terms. Only cli uses it.
          Map.entry("gpu", Set.of("run", "registry", "engine", "alloc", "trace", "torch", "workload", "devicemodel", "metrics", "report", "config", "core")));

  private static final Pattern PACKAGE = Pattern.compile("^\\s*package\\s+kvsim((?:\\.[a-z_][a-z0-9_]*)*)\\s*;", Pattern.MULTILINE);
  // kvsim.a.b followed by .ClassName or .* : the package part of an import or qualified name.
  private static final Pattern REFERENCE =
      Pattern.compile("(?<![\\w.])kvsim((?:\\s*\\.\\s*[a-z_][a-z0-9_]*)+)(?=\\s*\\.\\s*(?:[A-Z]|\\*))");

  /** A reference from one rule unit to another that its rule does not allow. */
  record Violation(String file, int line, String from, String to, String why) {
    @Override
    public String toString() {
      return file + ":" + line + ": kvsim." + from + " -> kvsim." + to + " (" + why + ")";
    }
  }

  /** Returns the rule unit of a package below kvsim: its top package, or alloc / alloc.support / alloc.family. */
  static String unit(String pkg) {
    String[] parts = pkg.split("\\.");
    if (parts[0].equals("alloc") && parts.length > 1) {
      return "alloc." + parts[1];
    }
    return parts[0];
  }

  /** Returns whether a rule unit has a rule. */
  static boolean hasRule(String unit) {
    return unit.equals("cli") || unit.equals("registry") || unit.startsWith("alloc.") || MAY_USE.containsKey(unit);
  }

  /** Returns why {@code from} may not refer to {@code to}, or null when it may. */
  static String forbidden(String from, String to) {
    if (from.equals(to) || from.equals("cli")) {
      return null;
    }
    if (from.equals("registry")) {
      return REGISTRY_MAY_USE.contains(to) || to.equals("alloc") || to.startsWith("alloc.") ? null : "registry may not use it";
    }
    if (from.startsWith("alloc.") && !from.equals("alloc.support")) {
      if (FAMILY_MAY_USE.contains(to)) {
        return null;
      }
      return to.startsWith("alloc.") ? "allocator families never import each other" : "a family may not use it";
    }
    Set<String> allowed = MAY_USE.get(from);
    return allowed.contains(to) ? null : "not on the allowed list " + new TreeSet<>(allowed);
  }

  /** Returns the violations of rule 1 in one source file. */
  static List<Violation> check(String fileName, String source) {
    return check(fileName, source, Map.of());
  }

  /**
   * Returns the violations of both rules in one source file; {@code concrete} maps each family's
   * rule unit ({@code alloc.caching}) to the simple names of its concrete classes.
   */
  static List<Violation> check(String fileName, String source, Map<String, Set<String>> concrete) {
    String code = withoutCommentsAndStrings(source);
    Matcher pm = PACKAGE.matcher(code);
    if (!pm.find() || pm.group(1).isEmpty()) {
      return List.of(); // outside kvsim's packages, or the root package: no rule applies
    }
    String from = unit(pm.group(1).substring(1));
    if (!hasRule(from)) {
      return List.of(new Violation(fileName, lineOf(code, pm.start(1)), from, from, "kvsim." + from + " has no dependency rule; add one to this test"));
    }
    List<Violation> out = new ArrayList<>();
    Matcher m = REFERENCE.matcher(code);
    while (m.find()) {
      String to = unit(m.group(1).replaceAll("\\s", "").substring(1));
      String why = forbidden(from, to);
      if (why != null) {
        out.add(new Violation(fileName, lineOf(code, m.start()), from, to, why));
      }
    }
    out.addAll(concreteReferences(fileName, code, from, concrete));
    return out;
  }

  private static int lineOf(String code, int index) {
    return 1 + (int) code.substring(0, index).chars().filter(c -> c == '\n').count();
  }

  // ---------------------------------------------------------------- rule 2: concrete classes

  // kvsim.alloc.<family>.<Class>: an import, a static import or a fully qualified name in code.
  private static final Pattern FAMILY_CLASS =
      Pattern.compile("(?<![\\w.])kvsim\\s*\\.\\s*alloc\\s*\\.\\s*([a-z_][a-z0-9_]*)\\s*\\.\\s*([A-Z][A-Za-z0-9_]*)");
  private static final Pattern FAMILY_WILDCARD =
      Pattern.compile("^\\s*import\\s+kvsim\\s*\\.\\s*alloc\\s*\\.\\s*([a-z_][a-z0-9_]*)\\s*\\.\\s*\\*\\s*;", Pattern.MULTILINE);
  // A top-level class declaration (at the start of a line): its name and what follows up to the body.
  private static final Pattern TOP_LEVEL_CLASS =
      Pattern.compile("^(?:(?:public|final|abstract|sealed|non-sealed|strictfp)\\s+)*class\\s+([A-Za-z_][A-Za-z0-9_]*)([^{]*)\\{", Pattern.MULTILINE);

  /** Returns whether {@code from} may name the concrete classes of family {@code family}. */
  private static boolean mayNameConcrete(String from, String family) {
    return from.equals(family) || from.equals("registry");
  }

  /** Returns the references of one file to concrete classes of a family it may not name them from. */
  private static List<Violation> concreteReferences(String fileName, String code, String from, Map<String, Set<String>> concrete) {
    List<Violation> out = new ArrayList<>();
    Matcher m = FAMILY_CLASS.matcher(code);
    while (m.find()) {
      String family = "alloc." + m.group(1);
      if (!mayNameConcrete(from, family) && concrete.getOrDefault(family, Set.of()).contains(m.group(2))) {
        out.add(new Violation(fileName, lineOf(code, m.start()), from, family + "." + m.group(2), CONCRETE_WHY));
      }
    }
    Matcher w = FAMILY_WILDCARD.matcher(code);
    while (w.find()) {
      String family = "alloc." + w.group(1);
      if (mayNameConcrete(from, family)) {
        continue;
      }
      for (String name : new TreeSet<>(concrete.getOrDefault(family, Set.of()))) {
        Matcher use = Pattern.compile("(?<![\\w.$])" + name + "(?![\\w$])").matcher(code);
        if (use.find()) {
          out.add(new Violation(fileName, lineOf(code, use.start()), from, family + "." + name, CONCRETE_WHY + ", through a wildcard import"));
        }
      }
    }
    return out;
  }

  private static final String CONCRETE_WHY =
      "a concrete class of a family is named only in its family and kvsim.registry; use the interface the registry returns";

  /**
   * Returns the concrete class a family source declares at top level, or null. A concrete class is
   * a {@code class} (not an interface, record or enum) that implements an interface (the SPI's
   * {@code Allocator}, a family interface such as {@code TorchCachingModel}) or whose name ends in
   * {@code Allocator}, {@code Driver} or {@code Manager}; exceptions never are. Value classes
   * (settings, statistics, per-request state) implement nothing and may be named anywhere their
   * family may.
   */
  static String concreteClassIn(String source) {
    Matcher m = TOP_LEVEL_CLASS.matcher(withoutCommentsAndStrings(source));
    if (!m.find()) {
      return null;
    }
    String name = m.group(1);
    String header = m.group(2);
    if (Pattern.compile("\\bextends\\s+[\\w.]*(?:Exception|Error)\\b").matcher(header).find()) {
      return null;
    }
    boolean implementsSome = Pattern.compile("\\bimplements\\b").matcher(header).find();
    return implementsSome || name.matches(".*(?:Allocator|Driver|Manager)") ? name : null;
  }

  /** Returns the concrete classes of every allocator family under {@code root}, by rule unit. */
  static Map<String, Set<String>> concreteClasses(Path root) throws IOException {
    Map<String, Set<String>> out = new TreeMap<>();
    Path alloc = root.resolve("kvsim").resolve("alloc");
    try (Stream<Path> files = Files.walk(alloc)) {
      for (Path file : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
        Path rel = alloc.relativize(file);
        if (rel.getNameCount() < 2 || rel.getName(0).toString().equals("support")) {
          continue; // the SPI itself, or alloc.support (shared mechanism, which rule 1 confines to the families)
        }
        String name = concreteClassIn(Files.readString(file, StandardCharsets.UTF_8));
        if (name != null) {
          out.computeIfAbsent("alloc." + rel.getName(0), k -> new TreeSet<>()).add(name);
        }
      }
    }
    return out;
  }

  /**
   * Returns the source with comments, string and character literals and text blocks blanked out;
   * line breaks are kept so that line numbers stay right.
   */
  static String withoutCommentsAndStrings(String source) {
    StringBuilder out = new StringBuilder(source.length());
    int i = 0;
    int n = source.length();
    while (i < n) {
      char c = source.charAt(i);
      if (c == '/' && i + 1 < n && source.charAt(i + 1) == '/') {
        while (i < n && source.charAt(i) != '\n') {
          out.append(' ');
          i++;
        }
      } else if (c == '/' && i + 1 < n && source.charAt(i + 1) == '*') {
        int end = source.indexOf("*/", i + 2);
        end = end < 0 ? n : end + 2;
        blank(source, i, end, out);
        i = end;
      } else if (source.startsWith("\"\"\"", i)) {
        int end = source.indexOf("\"\"\"", i + 3);
        end = end < 0 ? n : end + 3;
        blank(source, i, end, out);
        i = end;
      } else if (c == '"' || c == '\'') {
        int j = i + 1;
        while (j < n && source.charAt(j) != c && source.charAt(j) != '\n') {
          j += source.charAt(j) == '\\' ? 2 : 1;
        }
        int end = Math.min(n, j + 1);
        blank(source, i, end, out);
        i = end;
      } else {
        out.append(c);
        i++;
      }
    }
    return out.toString();
  }

  private static void blank(String source, int from, int to, StringBuilder out) {
    for (int k = from; k < to; k++) {
      out.append(source.charAt(k) == '\n' ? '\n' : ' ');
    }
  }

  private static Path mainSources() {
    for (Path candidate : List.of(Path.of("src/main/java"), Path.of("simulator/src/main/java"))) {
      if (Files.isDirectory(candidate.resolve("kvsim"))) {
        return candidate;
      }
    }
    throw new AssertionError("main sources not found from " + Path.of("").toAbsolutePath());
  }

  @Test
  void everyMainPackageUsesOnlyWhatItsLayerAllowsAndNamesNoConcreteClassOfAnotherFamily() throws IOException {
    Path root = mainSources();
    Map<String, Set<String>> concrete = concreteClasses(root);
    assertTrue(concrete.getOrDefault("alloc.caching", Set.of()).containsAll(Set.of("CachingAllocator", "ReplayDriver"))
        && concrete.getOrDefault("alloc.paged", Set.of()).containsAll(Set.of("BlockManager", "PagedAllocator")), "found only " + concrete);
    List<Violation> violations = new ArrayList<>();
    Set<String> units = new TreeSet<>();
    // The Spark engine's sources (profile spark) follow the same rules.
    Path spark = root.resolveSibling("../spark/java").normalize();
    for (Path sources : Files.isDirectory(spark) ? List.of(root, spark) : List.of(root)) {
      try (Stream<Path> files = Files.walk(sources)) {
        for (Path file : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
          String source = Files.readString(file, StandardCharsets.UTF_8);
          Matcher pm = PACKAGE.matcher(withoutCommentsAndStrings(source));
          if (pm.find() && !pm.group(1).isEmpty()) {
            units.add(unit(pm.group(1).substring(1)));
          }
          violations.addAll(check(sources.relativize(file).toString(), source, concrete));
        }
      }
    }
    assertTrue(units.containsAll(Set.of("core", "devicemodel", "alloc", "registry", "cli", "spark")), "scanned only " + units);
    assertEquals(List.of(), violations.stream().map(Violation::toString).toList());
  }

  @Test
  void coreUsingTheDeviceIsReported() {
    List<Violation> v = check("Bytes.java", "package kvsim.core;\n\nimport kvsim.devicemodel.Region;\nclass Bytes {}\n");
    assertEquals(1, v.size());
    assertEquals(3, v.get(0).line());
    assertEquals("devicemodel", v.get(0).to());
  }

  @Test
  void aFamilyMayUseSupportButNeverAnotherFamily() {
    String source =
        "package kvsim.alloc.multislab;\n"
            + "import kvsim.alloc.support.FixedBlockPool;\n"
            + "import kvsim.alloc.Allocator;\n"
            + "import kvsim.alloc.slab.SlabAllocator;\n"
            + "import static kvsim.core.Bytes.MiB;\n";
    List<Violation> v = check("MultiSlab.java", source);
    assertEquals(1, v.size(), v.toString());
    assertEquals("alloc.slab", v.get(0).to());
    assertTrue(v.get(0).why().contains("never import each other"));
  }

  @Test
  void qualifiedNamesInCodeCountButCommentsAndStringsDoNot() {
    String source =
        "package kvsim.metrics;\n"
            + "/** See {@link kvsim.engine.Run}. */\n"
            + "class M {\n"
            + "  // kvsim.report.Chart is not used here\n"
            + "  String s = \"kvsim.cli.KvSim\";\n"
            + "  Object o = new kvsim.alloc.slab.SlabAllocator(null);\n"
            + "  long b = kvsim.core.Bytes.MiB;\n"
            + "}\n";
    List<Violation> v = check("M.java", source);
    assertEquals(1, v.size(), v.toString());
    assertEquals("alloc.slab", v.get(0).to());
    assertEquals(6, v.get(0).line());
  }

  @Test
  void subPackagesFollowTheirParentsRuleAndWildcardsCount() {
    String source = "package kvsim.engine.queue;\nimport kvsim.alloc.Allocator;\nimport kvsim.report.*;\n";
    List<Violation> v = check("Q.java", source);
    assertEquals(1, v.size(), v.toString());
    assertEquals("report", v.get(0).to());
  }

  @Test
  void theRegistryAndTheCliMayUseTheirWiderSets() {
    assertEquals(List.of(), check("R.java", "package kvsim.registry;\nimport kvsim.alloc.firstfit.FirstFitAllocator;\nimport kvsim.workload.Gen;\n"));
    assertEquals(1, check("R.java", "package kvsim.registry;\nimport kvsim.engine.Run;\n").size());
    assertEquals(List.of(), check("C.java", "package kvsim.cli;\nimport kvsim.engine.Run;\nimport kvsim.report.Html;\n"));
  }

  @Test
  void aPackageWithoutARuleIsReported() {
    List<Violation> v = check("X.java", "/* gadgets */\npackage kvsim.gadgets;\nclass X {}\n");
    assertEquals(1, v.size(), v.toString());
    assertEquals(2, v.get(0).line());
    assertTrue(v.get(0).why().contains("no dependency rule"), v.toString());
  }

  @Test
  void torchMayUseTheCachingFamilyOnly() {
    assertEquals(List.of(), check("T.java", "package kvsim.torch;\nimport kvsim.alloc.caching.TorchAllocConf;\n"));
    assertEquals(1, check("T.java", "package kvsim.torch;\nimport kvsim.alloc.paged.PagedAllocator;\n").size());
  }

  private static final Map<String, Set<String>> CONCRETE =
      Map.of("alloc.caching", Set.of("CachingAllocator", "ReplayDriver"), "alloc.paged", Set.of("BlockManager", "PagedAllocator"));

  @Test
  void aConcreteClassNamedOutsideItsFamilyAndTheRegistryIsReported() {
    List<Violation> v = check("C.java", "package kvsim.cli;\nimport kvsim.alloc.caching.TieBreak;\nimport kvsim.alloc.caching.CachingAllocator;\n", CONCRETE);
    assertEquals(1, v.size(), v.toString());
    assertEquals(3, v.get(0).line());
    assertEquals("alloc.caching.CachingAllocator", v.get(0).to());
    assertTrue(v.get(0).why().contains("only in its family and kvsim.registry"), v.toString());
    // Static imports and fully qualified names in code count too; the layering allows torch the family.
    String torch =
        "package kvsim.torch;\n"
            + "import static kvsim.alloc.caching.CachingAllocator.NAME;\n"
            + "class T {\n"
            + "  Object d = new kvsim.alloc.caching . ReplayDriver();\n"
            + "  Object c = kvsim.alloc.caching.TorchAllocConf.defaults();\n"
            + "}\n";
    v = check("T.java", torch, CONCRETE);
    assertEquals(List.of(2, 4), v.stream().map(Violation::line).toList(), v.toString());
  }

  @Test
  void aWildcardImportReportsTheFirstUseOfAConcreteClass() {
    String uses = "package kvsim.blocks;\nimport kvsim.alloc.paged.*;\nclass B {\n  PagedRequest r;\n  BlockManager m;\n}\n";
    List<Violation> v = check("B.java", uses, CONCRETE);
    assertEquals(1, v.size(), v.toString());
    assertEquals(5, v.get(0).line());
    assertEquals("alloc.paged.BlockManager", v.get(0).to());
    String valueTypesOnly = "package kvsim.blocks;\nimport kvsim.alloc.paged.*;\nclass B {\n  PagedRequest r; // not a BlockManager\n  KvBlockManager m;\n}\n";
    assertEquals(List.of(), check("B.java", valueTypesOnly, CONCRETE));
  }

  @Test
  void theFamilyItselfAndTheRegistryMayNameItsConcreteClasses() {
    assertEquals(List.of(), check("R.java", "package kvsim.registry;\nimport kvsim.alloc.caching.CachingAllocator;\nimport kvsim.alloc.paged.*;\nclass R { BlockManager m; }\n", CONCRETE));
    assertEquals(List.of(), check("X.java", "package kvsim.alloc.caching;\nclass X { CachingAllocator a; kvsim.alloc.caching.ReplayDriver d; }\n", CONCRETE));
    assertEquals(List.of(), check("T.java", "package kvsim.torch;\n/** Built as a {@link kvsim.alloc.caching.CachingAllocator}. */\nclass T { String s = \"kvsim.alloc.caching.CachingAllocator\"; }\n", CONCRETE));
  }

  @Test
  void concreteClassesAreModelsDriversAndManagersButNotValueTypes() {
    assertEquals("CachingAllocator", concreteClassIn("package kvsim.alloc.caching;\n/** A class Foo implements nothing. */\npublic final class CachingAllocator implements TorchCachingModel {\n}\n"));
    assertEquals("ReplayDriver", concreteClassIn("package kvsim.alloc.caching;\npublic final class ReplayDriver\n    implements RecordedDriver {\n  public record Action(String a) implements Comparable<Action> {}\n}\n"));
    assertEquals("BlockManager", concreteClassIn("package kvsim.alloc.paged;\nfinal class BlockManager {\n}\n"));
    assertEquals(null, concreteClassIn("package kvsim.alloc.caching;\npublic final class TorchStats {\n  static final class Impl implements Runnable {}\n}\n"));
    assertEquals(null, concreteClassIn("package kvsim.alloc.paged;\npublic record BlockManagerConfig(int numBlocks) implements Cloneable {}\n"));
    assertEquals(null, concreteClassIn("package kvsim.alloc.caching;\npublic interface DeviceDriver {}\n"));
    assertEquals(null, concreteClassIn("package kvsim.alloc.caching;\npublic enum TieBreak implements Comparable<TieBreak> { ADDRESS }\n"));
    assertEquals(null, concreteClassIn("package kvsim.alloc.paged;\npublic final class BlockOpException extends RuntimeException implements Cloneable {}\n"));
  }

  @Test
  void theScanFindsTheModelsOfTheRealFamiliesAndNotTheirValueTypes() throws IOException {
    Map<String, Set<String>> c = concreteClasses(mainSources());
    assertTrue(c.get("alloc.caching").containsAll(Set.of("CachingAllocator", "RegionDriver", "ReplayDriver")), c.toString());
    assertTrue(c.get("alloc.paged").containsAll(Set.of("BlockManager", "PagedAllocator")), c.toString());
    assertEquals(Set.of("FirstFitAllocator"), c.get("alloc.firstfit"));
    for (String value : List.of("TorchAllocConf", "TorchStats", "TieBreak", "TorchCachingModel", "RecordedDriver", "DeviceDriver")) {
      assertTrue(!c.get("alloc.caching").contains(value), value + " counted as concrete: " + c);
    }
    for (String value : List.of("PagedRequest", "OpLog", "PrefixCacheStats", "BlockManagerConfig", "BlockOpException", "KvBlockManager")) {
      assertTrue(!c.get("alloc.paged").contains(value), value + " counted as concrete: " + c);
    }
  }
}
