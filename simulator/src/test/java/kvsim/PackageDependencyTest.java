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
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The layering of DESIGN §10 and style.md §6, checked on the sources: every reference from a main
 * package to another kvsim package (an import, or a fully qualified name in code; comments and
 * string literals do not count) must be on the referring package's allowed list.
 *
 * <ul>
 *   <li>core → nothing of kvsim; devicemodel → core; config → core, devicemodel; metrics → core; trace → core.
 *   <li>workload → trace, config, core, devicemodel.
 *   <li>alloc → devicemodel, metrics, core; alloc.support → alloc, devicemodel, metrics, core.
 *   <li>each allocator family alloc.&lt;family&gt; → alloc, alloc.support, devicemodel, metrics, core, and
 *       never another family.
 *   <li>engine → alloc, trace, devicemodel, metrics, config, core; report → metrics, config, core.
 *   <li>registry → alloc and every alloc.* package, workload, trace, devicemodel, config, core.
 *   <li>torch → alloc, alloc.caching, registry, trace, devicemodel, metrics, core; blocks → alloc.paged,
 *       registry, core; cli → anything.
 * </ul>
 *
 * <p>A sub-package follows the rule of the package it sits in ({@code engine.queue} is {@code
 * engine}); a package outside the list fails the test until a rule is added for it. Listed
 * packages that do not exist yet are simply not found.
 */
class PackageDependencyTest {

  private static final Set<String> FAMILY_MAY_USE = Set.of("alloc", "alloc.support", "devicemodel", "metrics", "core");
  private static final Set<String> REGISTRY_MAY_USE = Set.of("alloc", "workload", "trace", "devicemodel", "config", "core");
  private static final Map<String, Set<String>> MAY_USE =
      Map.ofEntries(
          Map.entry("core", Set.of()),
          Map.entry("devicemodel", Set.of("core")),
          Map.entry("config", Set.of("core", "devicemodel")),
          Map.entry("metrics", Set.of("core")),
          Map.entry("trace", Set.of("core")),
          Map.entry("workload", Set.of("trace", "config", "core", "devicemodel")),
          Map.entry("alloc", Set.of("devicemodel", "metrics", "core")),
          Map.entry("alloc.support", Set.of("alloc", "devicemodel", "metrics", "core")),
          Map.entry("engine", Set.of("alloc", "trace", "devicemodel", "metrics", "config", "core")),
          Map.entry("report", Set.of("metrics", "config", "core")),
          // The run library: resolves run specifications and runs them on the engine.
          Map.entry("run", Set.of("engine", "registry", "alloc", "trace", "workload", "devicemodel", "metrics", "config", "core")),
          // Snapshot replay and recording: the caching family's value types and model interface; the
          // model itself comes from the registry.
          Map.entry("torch", Set.of("alloc", "alloc.caching", "registry", "trace", "devicemodel", "metrics", "core")),
          // Script mode of the vLLM block manager, which it gets from the registry.
          Map.entry("blocks", Set.of("alloc.paged", "registry", "core")));

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
      return REGISTRY_MAY_USE.contains(to) || to.startsWith("alloc.") ? null : "registry may not use it";
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

  /** Returns the violations in one source file. */
  static List<Violation> check(String fileName, String source) {
    String code = withoutCommentsAndStrings(source);
    Matcher pm = PACKAGE.matcher(code);
    if (!pm.find() || pm.group(1).isEmpty()) {
      return List.of(); // outside kvsim's packages, or the root package: no rule applies
    }
    String from = unit(pm.group(1).substring(1));
    if (!hasRule(from)) {
      int line = 1 + (int) code.substring(0, pm.start(1)).chars().filter(c -> c == '\n').count();
      return List.of(new Violation(fileName, line, from, from, "kvsim." + from + " has no dependency rule; add one to this test"));
    }
    List<Violation> out = new ArrayList<>();
    Matcher m = REFERENCE.matcher(code);
    while (m.find()) {
      String to = unit(m.group(1).replaceAll("\\s", "").substring(1));
      String why = forbidden(from, to);
      if (why != null) {
        int line = 1 + (int) code.substring(0, m.start()).chars().filter(c -> c == '\n').count();
        out.add(new Violation(fileName, line, from, to, why));
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
  void everyMainPackageUsesOnlyWhatItsLayerAllows() throws IOException {
    Path root = mainSources();
    List<Violation> violations = new ArrayList<>();
    Set<String> units = new TreeSet<>();
    try (Stream<Path> files = Files.walk(root)) {
      for (Path file : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
        String source = Files.readString(file, StandardCharsets.UTF_8);
        Matcher pm = PACKAGE.matcher(withoutCommentsAndStrings(source));
        if (pm.find() && !pm.group(1).isEmpty()) {
          units.add(unit(pm.group(1).substring(1)));
        }
        violations.addAll(check(root.relativize(file).toString(), source));
      }
    }
    assertTrue(units.containsAll(Set.of("core", "devicemodel", "alloc", "registry", "cli")), "scanned only " + units);
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
    assertEquals(List.of(), check("T.java", "package kvsim.torch;\nimport kvsim.alloc.caching.CachingAllocator;\n"));
    assertEquals(1, check("T.java", "package kvsim.torch;\nimport kvsim.alloc.paged.PagedAllocator;\n").size());
  }
}
