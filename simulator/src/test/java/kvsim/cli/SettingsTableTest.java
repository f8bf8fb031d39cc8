package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import kvsim.config.GridSpec;
import kvsim.config.ServingSettings;
import kvsim.config.Setting;
import kvsim.run.ServingGrid;
import kvsim.serving.ServingSystems;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine.Option;

/**
 * The table of serving settings ({@link ServingSettings}) is the one source of the serving and
 * capacity commands' options, of {@code --set}, of a sweep grid's {@code set:} and of a suite's
 * serving fields: every option that is a setting is in it, its aliases name the same setting at
 * every level, each level refuses what it does not accept and a setting given twice (name and
 * alias), naming the setting and where it was given, and README's table of settings is the table.
 */
class SettingsTableTest {
  @TempDir Path tmp;

  /** The options of serving and capacity that are not settings: what runs, not how. */
  private static final Set<String> NOT_SETTINGS = Set.of("--system", "--set", "--check", "--seeds");

  private static void assertOneLineError(CliRun run, String message) {
    assertEquals(2, run.exitCode(), run.err());
    String err = run.err().strip();
    assertFalse(err.contains("\n"), "one line: " + err);
    assertTrue(err.startsWith("kvsim: error: " + message), err);
  }

  @Test
  void everyServingOptionThatIsASettingIsInTheTableAndEveryOptionSettingHasItsOption() {
    Set<String> options = new LinkedHashSet<>();
    for (Field f : ServingOptions.class.getDeclaredFields()) {
      Option o = f.getAnnotation(Option.class);
      if (o != null) {
        options.addAll(List.of(o.names()));
      }
    }
    for (String name : options) {
      if (NOT_SETTINGS.contains(name)) {
        continue;
      }
      Setting s = ServingSettings.find(name.substring(2));
      assertTrue(s != null && s.accepts(Setting.Level.OPTION), name + " is an option of serving and capacity but not a setting of the table");
    }
    for (Setting s : ServingSettings.at(Setting.Level.OPTION)) {
      assertTrue(options.contains("--" + s.key()), s.key() + " is accepted as an option but serving has no --" + s.key());
    }
    // Capacity takes serving's options as they are; sweep and regress take none of these (grids and suites carry them).
    assertTrue(java.util.Arrays.stream(CapacityCommand.class.getDeclaredFields()).anyMatch(f -> f.getType() == ServingOptions.class));
  }

  @Test
  void theTableAgreesWithTheSystemsAndTheOldKeys() {
    assertEquals(List.of(ServingSystems.PLAN_TWO_POOL, ServingSystems.PLAN_NAIVE), ServingSettings.PLAN.choices());
    for (Setting s : ServingSettings.all()) {
      if (!s.readsKey().isEmpty()) {
        assertTrue(List.of("vllm", "vllm-v0", "orca-max", "orca-pow2", "orca-oracle", "hf-naive", "vattention").stream().anyMatch(name -> ServingSystems.reads(name, s.readsKey())),
            s.key() + ": no system reads " + s.readsKey());
      }
    }
    for (String alias : List.of("block-tokens", "block-size", "block_size", "block_tokens", "page-size")) {
      assertSame(ServingSettings.BLOCK_TOKENS, ServingSettings.find(alias), alias);
    }
    assertNull(ServingSettings.find("slab.block-size"), "slab's block-size, in bytes, is an allocator option, not the serving setting");
  }

  @Test
  void eachAliasSetsTheBlockSizeInTokensAtEveryLevel() {
    for (String alias : List.of("block-size", "block_size", "block_tokens", "page-size", "block-tokens")) {
      List<ServingGrid.Cell> cells = ServingGrid.cells(kvsim.run.ServingSpec.Request.of("requests:count=10", List.of("vllm"), kvsim.config.Settings.none()),
          ServingGrid.parse(List.of(alias + "=8")));
      assertEquals(8, cells.get(0).spec().blockTokens(), alias);
      assertEquals(alias + "=8", cells.get(0).label().substring("vllm ".length()), "a cell keeps the name it was given");
      GridSpec g = GridSpec.parse("g.yaml", "workloads: [\"requests:count=10\"]\nsystems: [vllm]\nset: {" + alias + ": [8, 32]}\n", tmp);
      assertEquals(List.of("8", "32"), g.sets().get(alias));
    }
  }

  @Test
  void theOldOptionAndTheNewOneRunTheSameAndGivenTogetherAreRefused() throws IOException {
    Path a = tmp.resolve("a");
    Path b = tmp.resolve("b");
    CliRun.of("serving", "requests:count=10", "--block-size", "8", "-q", "-o", a.toString()).ok();
    CliRun.of("serving", "requests:count=10", "--block-tokens", "8", "-q", "-o", b.toString()).ok();
    assertEquals(Files.readString(a.resolve("summary.json")).replaceAll("\"wall_[a-z_]*\" *: *[0-9.eE+-]+", ""),
        Files.readString(b.resolve("summary.json")).replaceAll("\"wall_[a-z_]*\" *: *[0-9.eE+-]+", ""));
    assertTrue(Files.readString(a.resolve("summary.json")).contains("\"block_tokens\" : 8"), "8-token blocks");
    assertOneLineError(CliRun.of("serving", "requests:count=10", "--block-tokens", "8", "--block-size", "16", "-q", "-o", tmp.resolve("c").toString()),
        "--block-size: block-tokens is given twice (also at --block-tokens)");
    assertFalse(Files.exists(tmp.resolve("c")));
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "option not a number | --max-num-seqs|abc | --max-num-seqs: 'abc' is not a whole number",
        "option out of range | --watermark|1.5 | --watermark: must be in [0, 1), got 1.5",
        "option unknown plan | --plan|pool | --plan: unknown plan 'pool' (known: two-pool, naive)",
        "set value out of range | --set|watermark=0.01,2 | --set watermark=2: must be in [0, 1), got 2.0",
        "set alias not a number | --set|page-size=big | --set page-size=big: 'big' is not a whole number",
        "set level refuses seed | --set|seed=1,2 | --set seed=1,2: seed cannot be given as a --set axis (it is accepted as: option)",
        "set level refuses model | --set|model=opt-13b | --set model=opt-13b: model cannot be given as a --set axis",
        "set unknown key | --set|blocks=8 | --set blocks=8: 'blocks' is not a serving setting (kv-memory,",
      })
  void theCommandLineNamesTheOptionOfABadSetting(String name, String option, String value, String message) {
    assertOneLineError(CliRun.of("serving", "requests:count=10", "--system", "vllm-v0", option, value, "-q", "-o", tmp.resolve("o").toString()), message);
    assertFalse(Files.exists(tmp.resolve("o")));
  }

  @Test
  void aSetGivenTwiceUnderTwoNamesIsRefused() {
    assertOneLineError(CliRun.of("serving", "requests:count=10", "--set", "block-size=8", "--set", "block-tokens=16", "-q", "-o", tmp.resolve("o").toString()),
        "--set block-tokens=16: block-tokens is given twice (also as block-size); list its values in one --set");
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "alias and name | block-size: [8]\\n  block-tokens: [16]\\n | grid.yaml:5: set.block-tokens: block-tokens is given twice (also as set.block-size)",
        "level refuses beam-seed | beam-seed: [1]\\n | grid.yaml:4: set.beam-seed: beam-seed cannot be given as a key of a grid's set:",
        "value at its line | max-num-seqs:\\n    - 8\\n    - 0\\n | grid.yaml:6: set.max-num-seqs: must be positive, got 0",
        "alias value at its line | page-size: [8, x]\\n | grid.yaml:4: set.page-size: 'x' is not a whole number",
        "plan on a paged system | plan: [naive]\\n | grid.yaml:4: set.plan: naive: vllm keeps its KV in a block pool",
        "swap-space a vllm-v0 setting | swap-space: [1GiB]\\n | grid.yaml:4: set.swap-space: vllm does not read swap-space (vllm-v0 does)",
      })
  void aGridNamesItsFileLineAndSetting(String name, String set, String message) throws IOException {
    Path grid = tmp.resolve("grid.yaml");
    Files.writeString(grid, ("workloads: [\"requests:count=10\"]\nsystems: [vllm]\nset:\n  " + set).replace("\\n", "\n"));
    assertOneLineError(CliRun.of("sweep", grid.toString(), "-o", tmp.resolve("o").toString()), grid.getParent() + "/" + message);
    assertFalse(Files.exists(tmp.resolve("o")));
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "alias and name | block-size: 8\\n    block_tokens: 16\\n | :10: scenarios[0].block_tokens: block-tokens is given twice (also at ",
        "level refuses seed | seed: 3\\n | :9: scenarios[0].seed: unknown field (known: name, serving, systems, model, device, kv-memory,",
        "value at its line | watermark: 1\\n | :9: scenarios[0].watermark: must be in [0, 1), got 1.0",
        "watermark reaches the suite | watermark: 0.05\\n | :9: scenarios[0].watermark: vllm does not read watermark (vllm-v0 does)",
        "kv-memory too large | kv-memory: 79GiB\\n | :9: scenarios[0].kv-memory: 79GiB (79.00 GiB) of KV memory beside",
        "kv-memory and utilisation | kv-memory: 12GiB\\n    gpu-memory-utilization: 0.5\\n | :10: scenarios[0].gpu-memory-utilization: give either it or "
            + "SUITE:9: scenarios[0].kv-memory (the KV memory), not both",
      })
  void aSuiteNamesItsFileLineAndSetting(String name, String fields, String message) throws IOException {
    Path suite = tmp.resolve("suite.yaml");
    Files.writeString(suite, ("version: 1\nwatch:\n  serving:\n    - {metric: preemptions, better: lower}\nscenarios:\n"
        + "  - name: s\n    serving: requests:count=10\n    systems: [vllm]\n    " + fields).replace("\\n", "\n"));
    assertOneLineError(CliRun.of("regress", suite.toString(), "--baseline", tmp.resolve("b").toString(), "--update", "--quiet"),
        suite + message.replace("SUITE", suite.toString()));
    assertFalse(Files.exists(tmp.resolve("b")));
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "weights not a size | weights: banana\\n | :9: scenarios[0].weights: ",
        "unknown device | device: h900\\n | :9: scenarios[0].device: unknown device 'h900'",
        "unknown model | model: gpt-9\\n | :9: scenarios[0].model: ",
      })
  void anAllocatorScenariosValueIsReportedAtItsFieldWithoutReadingTheMessage(String name, String fields, String message) throws IOException {
    Path suite = tmp.resolve("l1.yaml");
    Files.writeString(suite, ("version: 1\nwatch:\n  allocators:\n    - {metric: oom_count, better: lower}\nscenarios:\n"
        + "  - name: a\n    workload: churn:ops=50\n    allocators: [first-fit]\n    " + fields).replace("\\n", "\n"));
    assertOneLineError(CliRun.of("regress", suite.toString(), "--baseline", tmp.resolve("b").toString(), "--update", "--quiet"), suite + message);
  }

  @Test
  void anAllocatorGridsPlanIsReportedAtItsLine() throws IOException {
    Path grid = tmp.resolve("grid.yaml");
    Files.writeString(grid, "workloads: [\"churn:ops=50\"]\nallocators: [first-fit]\nplan:\n  weights: banana\n");
    assertOneLineError(CliRun.of("sweep", grid.toString(), "-o", tmp.resolve("o").toString()), grid + ":4: plan.weights: ");
  }

  /** Returns README's row of a setting. */
  static String readmeRow(Setting s) {
    String aliases = s.aliases().isEmpty() ? "" : s.aliases().stream().map(a -> "`" + a + "`").collect(Collectors.joining(", "));
    List<String> levels = new ArrayList<>();
    for (Setting.Level l : Setting.Level.values()) {
      if (s.accepts(l)) {
        levels.add(switch (l) {
          case OPTION -> "`--" + s.key() + "`";
          case SET -> "`--set`";
          case GRID_SET -> "grid `set:`";
          case GRID_FIELD -> "grid field";
          case SUITE -> "suite";
        });
      }
    }
    return "| `" + s.key() + "` | " + aliases + " | " + s.typeName() + (s.unit().isEmpty() ? "" : ", " + s.unit()) + " | " + s.defaultText() + " | "
        + String.join(", ", levels) + " | " + (s.echo().isEmpty() ? "" : "`" + s.echo() + "`") + " | " + s.description() + " |";
  }

  @Test
  void readmesTableOfSettingsIsTheTable() throws IOException {
    Path readme = Path.of("../README.md");
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.exists(readme), "README.md beside the simulator");
    String text = Files.readString(readme);
    int at = text.indexOf("\n### Serving settings\n");
    assertTrue(at >= 0, "README has a section of serving settings");
    List<String> rows = text.substring(at).lines().dropWhile(l -> !l.startsWith("| `")).takeWhile(l -> l.startsWith("| `")).toList();
    List<String> expected = ServingSettings.all().stream().map(SettingsTableTest::readmeRow).toList();
    assertEquals(String.join("\n", expected), String.join("\n", rows), "README's table of serving settings, row by row");
  }
}
