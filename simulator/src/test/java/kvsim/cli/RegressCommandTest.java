package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import javax.xml.XMLConstants;
import javax.xml.transform.stream.StreamSource;
import javax.xml.validation.SchemaFactory;
import javax.xml.validation.Validator;
import kvsim.registry.AllocatorRegistry;
import kvsim.regress.Suite;
import kvsim.serving.ServingSystems;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * {@code kvsim regress}: the committed default suite passes against the committed baselines and
 * covers every registered allocator and serving system; a deliberate policy change (first-fit's
 * alignment, a PYTORCH_CUDA_ALLOC_CONF string) is caught and named; improvements and moves within
 * tolerance pass; bad suites and missing, corrupt or incompatible baselines exit 2 with nothing
 * written; {@code --update} is byte-identical when run twice; the JUnit XML follows Surefire's schema.
 */
class RegressCommandTest {
  @TempDir Path dir;
  private Path suite;
  private Path baselines;

  private static final String SUITE =
      "version: 1\n"
          + "watch:\n"
          + "  allocators:\n"
          + "    - {metric: internal_fragmentation.mean, better: lower}\n"
          + "    - {metric: oom_count, better: lower}\n"
          + "    - {metric: reserved_bytes.peak, better: lower}\n"
          + "scenarios:\n"
          + "  - name: churn\n"
          + "    workload: churn:ops=400,seed=3\n"
          + "    allocators: [first-fit, pytorch-caching]\n";

  @BeforeEach
  void recordBaselines() throws IOException {
    suite = dir.resolve("tiny.yaml");
    Files.writeString(suite, SUITE);
    baselines = dir.resolve("baselines");
    CliRun.of("regress", suite.toString(), "--baseline", baselines.toString(), "--update", "--quiet").ok();
  }

  private CliRun regress(String... extra) {
    String[] args = Stream.concat(Stream.of("regress", suite.toString(), "--baseline", baselines.toString(), "--quiet"), Stream.of(extra))
        .toArray(String[]::new);
    return CliRun.of(args);
  }

  private static Path repoRoot() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isDirectory(p.resolve("workloads/regress")) && Files.isDirectory(p.resolve("simulator"))) {
        return p;
      }
    }
    throw new AssertionError("repository root not found from " + Path.of("").toAbsolutePath());
  }

  @Test
  void theDefaultSuitePassesAgainstTheCommittedBaselinesAndCatchesFirstFitsAlignmentAt2MiB() {
    Path root = repoRoot();
    String suiteFile = root.resolve("workloads/regress/default.yaml").toString();
    String base = root.resolve("results/baselines").toString();
    CliRun same = CliRun.of("regress", suiteFile, "--baseline", base, "--scenario", "churn-1000", "--quiet").ok();
    assertTrue(same.out().contains("suite default: 0 regressed"), same.out());
    CliRun changed = CliRun.of("regress", suiteFile, "--baseline", base, "--scenario", "churn-1000", "--set", "first-fit.alignment=2MiB", "--quiet");
    assertEquals(1, changed.exitCode(), changed.out() + changed.err());
    assertTrue(changed.out().contains("regressed: churn-1000 / first-fit / internal_fragmentation.mean regressed: 0 -> 0.00349699"), changed.out());
  }

  @Test
  void theDefaultSuiteRunsEveryRegisteredAllocatorOnChurnAndEveryServingSystem() {
    Path file = repoRoot().resolve("workloads/regress/default.yaml");
    Suite s = Suite.read(file);
    List<Suite.Scenario> churn = s.scenarios().stream().filter(sc -> sc.kind() == Suite.Kind.ALLOCATORS && sc.workload().startsWith("churn:")).toList();
    assertFalse(churn.isEmpty(), "no churn scenario in " + file);
    for (Suite.Scenario sc : churn) {
      for (String allocator : AllocatorRegistry.names()) {
        assertTrue(sc.runs().contains(allocator), "allocator " + allocator + " is registered but scenario " + sc.name() + " of " + file
            + " does not run it: add it to the scenario's allocators: list, then record its baselines with"
            + " ./kvsim regress workloads/regress/default.yaml --baseline results/baselines --update");
      }
    }
    for (ServingSystems.System system : ServingSystems.systems()) {
      assertTrue(s.scenarios().stream().anyMatch(sc -> sc.kind() == Suite.Kind.SERVING && sc.runs().contains(system.name())),
          "serving system " + system.name() + " is in no serving scenario of " + file + ": add it to a systems: list and record baselines with --update");
    }
  }

  @Test
  void aDeliberateRegressionIsCaughtAndNamedWithItsDelta() {
    CliRun same = regress().ok();
    assertTrue(same.out().contains("suite tiny: 0 regressed, 6 unchanged (6 watched metrics in 1 scenarios)"), same.out());
    CliRun run = regress("--set", "first-fit.alignment=2MiB");
    assertEquals(1, run.exitCode(), run.out() + run.err());
    assertTrue(run.out().contains("regressed: churn / first-fit / internal_fragmentation.mean regressed: 0 -> "), run.out());
    assertTrue(run.out().contains("(lower is better, tolerance exact)"), run.out());
    assertTrue(run.out().lines().anyMatch(l -> l.matches("churn\\s+first-fit\\s+internal_fragmentation\\.mean\\s+0\\s+0\\.\\d+\\s+\\+0\\.\\d+\\s+regressed")), run.out());
  }

  @Test
  void aPytorchAllocConfChangeIsCaught() {
    CliRun run = regress("--torch-alloc-conf", "roundup_power2_divisions:2");
    assertEquals(1, run.exitCode(), run.out() + run.err());
    assertTrue(run.out().contains("regressed: churn / pytorch-caching / internal_fragmentation.mean regressed"), run.out());
    assertFalse(run.out().contains("/ first-fit /"), run.out());
  }

  @Test
  void anImprovementPassesAndIsReportedAsOne() {
    CliRun.of("regress", suite.toString(), "--baseline", baselines.toString(), "--update", "--quiet", "--set", "first-fit.alignment=2MiB").ok();
    CliRun run = regress().ok();
    assertTrue(run.out().lines().anyMatch(l -> l.matches("churn\\s+first-fit\\s+internal_fragmentation\\.mean\\s+0\\.\\d+\\s+0\\s+-0\\.\\d+ \\(-100\\.00%\\)\\s+improved")), run.out());
    assertTrue(run.out().contains("0 regressed, 1 improved"), run.out());
  }

  @Test
  void aToleranceLetsASmallChangePass() throws IOException {
    Files.writeString(suite, SUITE.replace("{metric: internal_fragmentation.mean, better: lower}", "{metric: internal_fragmentation.mean, better: lower, tolerance: 0.5}"));
    CliRun run = regress("--set", "first-fit.alignment=2MiB").ok();
    assertTrue(run.out().lines().anyMatch(l -> l.matches("churn\\s+first-fit\\s+internal_fragmentation\\.mean\\s+0\\s+0\\.\\d+\\s+\\+0\\.\\d+\\s+within tolerance")), run.out());
  }

  @Test
  void updateTwiceIsByteIdenticalAndSaysWhatChanged() throws IOException {
    byte[] first = Files.readAllBytes(baselines.resolve("tiny/churn.json"));
    CliRun again = CliRun.of("regress", suite.toString(), "--baseline", baselines.toString(), "--update", "--quiet").ok();
    assertArrayEquals(first, Files.readAllBytes(baselines.resolve("tiny/churn.json")));
    assertTrue(again.out().contains("baseline churn: unchanged"), again.out());
    CliRun changed = CliRun.of("regress", suite.toString(), "--baseline", baselines.toString(), "--update", "--quiet", "--set", "first-fit.alignment=2MiB").ok();
    assertTrue(changed.out().contains("baseline churn: 1 value changed"), changed.out());
    String json = Files.readString(baselines.resolve("tiny/churn.json"));
    assertTrue(json.startsWith("{\n  \"format\" : \"kvsim-baseline\",\n  \"version\" : 1,\n  \"kvsim_version\" : "), json);
  }

  @Test
  void aMissingBaselineExitsTwoAndSaysHowToRecordOne() throws IOException {
    Files.delete(baselines.resolve("tiny/churn.json"));
    Path junit = dir.resolve("j.xml");
    CliRun run = regress("--junit", junit.toString());
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().contains("churn.json: no baseline for scenario churn of suite tiny; record one with 'kvsim regress "), run.err());
    assertTrue(run.err().contains("--update'"), run.err());
    assertFalse(Files.exists(junit), "no partial output");
    assertEquals("", run.out());
  }

  @Test
  void aCorruptBaselineExitsTwoNamingTheLine() throws IOException {
    Path file = baselines.resolve("tiny/churn.json");
    String json = Files.readString(file);
    Files.writeString(file, json.substring(0, json.indexOf("\"runs\"")) + "\"runs\" : [ {\n  \"name\" : \n");
    CliRun run = regress();
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().matches("(?s)kvsim: error: .*churn\\.json:1[0-2]: not valid JSON .*--update'\\s*"), run.err());
  }

  @Test
  void anIncompatibleBaselineExitsTwo() throws IOException {
    Path file = baselines.resolve("tiny/churn.json");
    String json = Files.readString(file);
    Files.writeString(file, json.replaceFirst("\"kvsim_version\" : \"[^\"]*\"", "\"kvsim_version\" : \"9.4.0\""));
    CliRun run = regress();
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().contains("kvsim_version: recorded by kvsim 9.4.0, incompatible with kvsim "), run.err());

    Files.writeString(file, json);
    Files.writeString(suite, SUITE.replace("version: 1", "version: 2"));
    run = regress();
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().contains("suite_version: recorded for version 1 of suite tiny, which is now version 2; record it again with"), run.err());

    Files.writeString(suite, SUITE.replace("ops=400", "ops=500"));
    run = regress();
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().contains("scenario_digest: scenario churn has changed since this baseline was recorded"), run.err());
  }

  @Test
  void aNewToleranceNeedsNoNewBaseline() throws IOException {
    Files.writeString(suite, SUITE.replace("better: lower}\n    - {metric: oom_count", "better: lower, tolerance: 5%}\n    - {metric: oom_count"));
    regress().ok();
  }

  @Test
  void anUnknownMetricOrAllocatorInTheSuiteExitsTwoWithFileAndLine() throws IOException {
    Files.writeString(suite, SUITE.replace("metric: oom_count", "metric: oom_cuont"));
    CliRun run = CliRun.of("regress", suite.toString(), "--baseline", baselines.toString(), "--update", "--quiet");
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().startsWith("kvsim: error: " + suite + ":5: watch.allocators[1].metric: unknown metric for first-fit in scenario churn (known: "), run.err());

    Files.writeString(suite, SUITE.replace("[first-fit, pytorch-caching]", "[first-fit,\n      frist-fit]"));
    run = regress();
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().startsWith("kvsim: error: " + suite + ":11: scenarios[0].allocators[1]: unknown allocator 'frist-fit'"), run.err());

    Files.writeString(suite, SUITE + "    devcie: h100-80\n");
    run = regress();
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().startsWith("kvsim: error: " + suite + ":11: scenarios[0].devcie: unknown field (known: name, workload, "), run.err());

    Files.writeString(suite, SUITE.replace("[first-fit, pytorch-caching]", "[first-fit]") + "    torch-alloc-conf: \"expandable_segments:True\"\n");
    run = regress();
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().startsWith("kvsim: error: " + suite + ":11: scenarios[0].torch-alloc-conf: applies to pytorch-caching, which the scenario does not run"), run.err());

    Files.writeString(suite, SUITE.replace("churn:ops=400,seed=3", "churn:opps=400"));
    run = regress();
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().startsWith("kvsim: error: " + suite + ":9: scenarios[0].workload: "), run.err());
  }

  @Test
  void aPolicyChangeForAnAllocatorNoScenarioRunsIsBadInput() {
    CliRun run = regress("--set", "slab.block-size=4MiB");
    assertEquals(2, run.exitCode(), run.out() + run.err());
    assertTrue(run.err().contains("--set slab.block-size=4MiB: no allocator scenario of " + suite + " that runs now runs slab"), run.err());
    run = regress("--set", "first-fit.alignmnet=2MiB");
    assertEquals(2, run.exitCode(), run.out() + run.err());
  }

  @Test
  void theJunitXmlFollowsSurefiresSchemaWithOneCasePerScenarioRunAndMetric() throws Exception {
    Path junit = dir.resolve("report.xml");
    Path markdown = dir.resolve("report.md");
    CliRun run = regress("--set", "first-fit.alignment=2MiB", "--junit", junit.toString(), "--markdown", markdown.toString());
    assertEquals(1, run.exitCode(), run.out() + run.err());
    try (var xsd = RegressCommandTest.class.getResourceAsStream("/junit/surefire-test-report-3.0.xsd")) {
      Validator v = SchemaFactory.newInstance(XMLConstants.W3C_XML_SCHEMA_NS_URI).newSchema(new StreamSource(xsd)).newValidator();
      v.validate(new StreamSource(junit.toFile()));
    }
    Document doc = javax.xml.parsers.DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(junit.toFile());
    NodeList cases = doc.getElementsByTagName("testcase");
    assertEquals(2 * 3, cases.getLength());
    NodeList failures = doc.getElementsByTagName("failure");
    assertTrue(failures.getLength() >= 1);
    Element f = (Element) failures.item(0);
    assertEquals("first-fit: internal_fragmentation.mean", ((Element) f.getParentNode()).getAttribute("name"));
    assertEquals("tiny.churn", ((Element) f.getParentNode()).getAttribute("classname"));
    assertTrue(f.getAttribute("message").matches("internal_fragmentation\\.mean regressed: 0 -> 0\\.\\d+ \\(delta \\+0\\.\\d+\\)"), f.getAttribute("message"));
    assertEquals(Integer.toString(failures.getLength()), doc.getDocumentElement().getAttribute("failures"));

    String md = Files.readString(markdown);
    assertTrue(md.startsWith("### kvsim regress: tiny — regressions\n\nPolicy change: `first-fit.alignment=2MiB`.\n"), md);
    assertEquals("first-fit.alignment=2MiB", ((Element) doc.getElementsByTagName("property").item(0)).getAttribute("value"));
    assertTrue(md.contains("| churn | first-fit | `internal_fragmentation.mean` | 0 | 0."), md);
  }
}
