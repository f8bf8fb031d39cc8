package kvsim.regress;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.registry.AllocatorRegistry;
import kvsim.report.ResultFolder;

/**
 * The CI regression gate: runs a {@link Suite}, compares every watched metric with the scenario's
 * committed {@link Baseline}, and gives a verdict per (scenario, allocator or system, metric). With
 * {@code update}, it records the runs as the new baselines instead, after comparing them with the
 * old ones where those are compatible, so that the caller can say what changed.
 *
 * <p>Order of work, so that bad input fails before anything runs and leaves nothing behind: the
 * policy changes ({@code --set}) are checked, every scenario is resolved, every baseline is read and
 * checked (unless updating), then the runs go, and only then are files written. Baselines of a
 * suite form one folder, {@code BASELINES/<suite>/}, written whole through {@link ResultFolder}
 * (marker file, atomic replacement, never over a folder kvsim did not write); its files are
 * byte-identical for the same suite, kvsim version and results.
 */
public final class Regression {
  /**
   * What to run and how.
   *
   * @param baselineDir the baselines' root ({@code results/baselines}); the suite's are in its sub-folder of the suite's name
   * @param update record the runs as the new baselines
   * @param settings {@code ALLOCATOR.KEY=VALUE} policy changes, applied to every allocator-level run of that allocator
   * @param scenarios the scenarios to run, by name; empty for all (not with {@code update})
   * @param threads runs at once
   */
  public record Options(Path baselineDir, boolean update, List<String> settings, List<String> scenarios, int threads) {}

  /**
   * The gate's outcome.
   *
   * @param suite the suite run
   * @param comparisons every watched metric of every run, in suite order
   * @param written where baselines were written ({@code update}), else null
   * @param notes with {@code update}, per scenario what happened to its baseline
   * @param settings the policy changes applied ({@code ALLOCATOR.KEY=VALUE})
   * @param measured per scenario run, in suite order, its watched metrics now, as the baseline
   *     {@code --update} records ({@link Baseline#write})
   */
  public record Outcome(Suite suite, List<Comparison> comparisons, Path written, List<String> notes, List<String> settings, List<Baseline> measured) {
    /** Returns how many comparisons have this verdict. */
    public long count(Verdict v) {
      return comparisons.stream().filter(c -> c.verdict() == v).count();
    }

    /** Returns the comparisons with this verdict, in suite order. */
    public List<Comparison> with(Verdict v) {
      return comparisons.stream().filter(c -> c.verdict() == v).toList();
    }

    /** Returns whether the gate fails: something regressed and the baselines were not being recorded. */
    public boolean failed() {
      return written == null && count(Verdict.REGRESSED) > 0;
    }

    /** Returns the number of scenarios run. */
    public long scenarioCount() {
      return comparisons.stream().map(Comparison::scenario).distinct().count();
    }
  }

  /** Receives progress: {@code done} of {@code total} runs finished. */
  @FunctionalInterface
  public interface Progress {
    void runs(int done, int total);
  }

  private Regression() {}

  /** Runs the gate (see the class comment). */
  public static Outcome run(Suite suite, Options o, String kvsimVersion, Progress progress) throws IOException {
    if (o.update() && !o.scenarios().isEmpty()) {
      throw new InputException("--update records the baselines of the whole suite; leave out --scenario");
    }
    List<Suite.Scenario> scenarios = new ArrayList<>();
    if (o.scenarios().isEmpty()) {
      scenarios.addAll(suite.scenarios());
    } else {
      for (String name : o.scenarios()) {
        Suite.Scenario s = suite.scenario(name);
        if (!scenarios.contains(s)) {
          scenarios.add(s);
        }
      }
    }
    checkSettings(o.settings(), scenarios, suite);
    SuiteRunner.Prepared prepared = SuiteRunner.prepare(scenarios, o.settings(), kvsimVersion);
    Path suiteDir = o.baselineDir().resolve(suite.name());
    String updateCommand = "kvsim regress " + suite.source() + " --baseline " + o.baselineDir() + " --update";
    Map<String, Baseline> baselines = new LinkedHashMap<>();
    List<String> notes = new ArrayList<>();
    for (Suite.Scenario s : scenarios) {
      Path file = Baseline.file(suiteDir, s.name());
      try {
        baselines.put(s.name(), Baseline.read(file, suite, s, kvsimVersion, updateCommand));
      } catch (InputException e) {
        if (!o.update()) {
          throw e;
        }
        notes.add(s.name() + ": recorded anew (" + (java.nio.file.Files.exists(file) ? "the old baseline was not comparable: " + e.getMessage() : "no baseline before") + ")");
      }
    }
    ResultFolder.Target target = o.update() ? ResultFolder.Target.at(suiteDir, ResultFolder.Kind.BASELINE, false).asCommitted().check() : null;

    List<SuiteRunner.ScenarioResult> results = SuiteRunner.run(prepared, o.threads(), progress == null ? null : progress::runs);

    List<Comparison> comparisons = new ArrayList<>();
    List<Baseline> recorded = new ArrayList<>();
    for (SuiteRunner.ScenarioResult r : results) {
      Suite.Scenario s = r.scenario();
      Baseline old = baselines.get(s.name());
      Map<String, Map<String, Object>> values = new LinkedHashMap<>();
      int changed = 0;
      for (SuiteRunner.RunSummary run : r.runs()) {
        Map<String, Object> mine = new LinkedHashMap<>();
        for (Suite.Watch w : s.watch()) {
          Number now = (Number) SuiteRunner.value(s.kind(), run, w, s.name());
          mine.put(w.metric(), now);
          Comparison c =
              old == null
                  ? Comparison.fresh(s.name(), run.run(), w, now, run.wallNanos())
                  : Comparison.of(s.name(), run.run(), w, (Number) old.values().get(run.run()).get(w.metric()), now, run.wallNanos());
          comparisons.add(c);
          if (c.verdict() != Verdict.UNCHANGED && c.verdict() != Verdict.NEW) {
            changed++;
          }
        }
        values.put(run.run(), mine);
      }
      recorded.add(new Baseline(kvsimVersion, suite.name(), suite.version(), s.name(), s.kind().key(), s.digest(), values));
      if (o.update() && old != null) {
        notes.add(s.name() + ": " + (changed == 0 ? "unchanged" : changed + " value" + (changed == 1 ? "" : "s") + " changed"));
      }
    }
    Path written = null;
    if (o.update()) {
      written = ResultFolder.write(target, tmp -> {
        for (Baseline b : recorded) {
          b.write(tmp);
        }
      });
    }
    return new Outcome(suite, comparisons, written, notes, List.copyOf(o.settings()), List.copyOf(recorded));
  }

  /** Every policy change must be well formed and name an allocator that some allocator scenario runs. */
  private static void checkSettings(List<String> settings, List<Suite.Scenario> scenarios, Suite suite) {
    for (String setting : settings) {
      int dot = setting.indexOf('.');
      int eq = setting.indexOf('=');
      if (dot <= 0 || eq < dot + 2) {
        throw new InputException("--set: expected ALLOCATOR.KEY=VALUE, got '" + setting + "'");
      }
      String allocator = setting.substring(0, dot);
      AllocatorRegistry.get(allocator);
      boolean run = scenarios.stream().anyMatch(s -> s.kind() == Suite.Kind.ALLOCATORS && s.runs().contains(allocator));
      if (!run) {
        throw new InputException("--set " + setting + ": no allocator scenario of " + suite.source() + " that runs now runs " + allocator);
      }
    }
  }
}
