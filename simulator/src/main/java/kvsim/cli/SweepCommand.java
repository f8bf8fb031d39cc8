package kvsim.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import kvsim.config.GridSpec;
import kvsim.report.HtmlReport;
import kvsim.report.ResultFolder;
import kvsim.report.SweepChart;
import kvsim.report.SweepTable;
import kvsim.report.SweepTableResults;
import kvsim.run.GridSweep;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kvsim sweep}: every cell of a grid of workloads, allocators or systems, options and seeds, into one table. */
@Command(
    name = "sweep",
    mixinStandardHelpOptions = true,
    description = {
      "Run every cell of a grid (workloads × allocators or serving systems × options × seeds, from a YAML file) and write one tidy",
      "table, one row per cell and one column per parameter and summary metric: sweep.csv and sweep.json. Cells run on all cores",
      "(--engine local) or on Apache Spark (--engine spark, in the Spark build). Resumable: run it again on the same -o folder and",
      "only the cells without a stored result run; the table is the same bytes whatever the engine or thread count."
    },
    footer = {
      "",
      "Grid file:",
      "  workloads: [\"churn:ops=1000\"]            # generator specs or trace paths (relative to the grid file)",
      "  allocators: [first-fit, best-fit]         # or systems: [vllm, orca-oracle] for serving cells",
      "  set: {first-fit.alignment: [512, 2MiB]}   # options, each a list; serving: block-size, kv-memory, max-num-seqs, ...",
      "  seeds: 1..200                             # or a list; device, model: a value or a list; plan: {weights, activations}",
      "",
      "Exit status: 0 success, 1 run failed, 2 bad input or usage."
    })
final class SweepCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Parameters(index = "0", paramLabel = "GRID.yaml", description = "The grid file.")
  Path grid;

  @Option(names = {"-o", "--output"}, paramLabel = "DIR",
      description = "Result folder (default results/runs/<time>-sweep-<grid>); an earlier sweep folder is resumed, as for replay otherwise.")
  Path output;

  @Option(names = "--force", description = "Also use a kvsim result folder into which files of your own were added.")
  boolean force;

  @CommandLine.Mixin EngineOptions engineOptions;

  @CommandLine.Mixin QuietOption quiet;

  @CommandLine.Mixin NoReportOption report;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    GridSweep.GridFile file = GridSweep.GridFile.read(grid);
    GridSpec g = file.spec();
    List<GridSweep.Cell> cells = GridSweep.cells(g);
    GridSweep.validate(g, cells); // every cell checked before a result folder exists
    kvsim.alloc.Calibration calibration = GridSweep.calibration(g);
    if (calibration != null) {
      // Note [A calibration from another device] on alloc.Calibration: once per device of the grid.
      for (String d : g.devices().isEmpty() ? List.of(kvsim.devicemodel.DeviceSpec.DEFAULT_NAME) : g.devices()) {
        String warning = calibration.deviceWarning(g.serving() ? kvsim.devicemodel.DeviceGroup.parse(d).gpu() : kvsim.devicemodel.DeviceSpec.parse(d));
        if (warning != null) {
          err.println("kvsim: warning: " + warning);
          err.flush();
        }
      }
    }
    GridSweep.Engine e = engineOptions.engine();
    String name = "sweep-" + grid.getFileName().toString().replaceAll("\\.ya?ml$", "").replaceAll("[^A-Za-z0-9._-]", "");
    ResultFolder.Target target = (output != null ? ResultFolder.Target.at(output, ResultFolder.Kind.SWEEP, force)
        : ResultFolder.Target.fresh(Path.of("results", "runs"), name, ResultFolder.Kind.SWEEP)).reading(List.of(grid));
    Path dir = ResultFolder.openResumable(target.check(), SweepTable.CELLS);

    List<GridSweep.Cell> todo = new ArrayList<>();
    for (GridSweep.Cell c : cells) {
      if (SweepTable.storedRow(dir, c.key()) == null) {
        todo.add(c);
      }
    }
    if (!quiet.quiet) {
      err.printf("kvsim: %s: %,d cells, %,d already done, %,d to run (%s engine)%n", grid, cells.size(), cells.size() - todo.size(), todo.size(), engineOptions.engine);
      err.flush();
    }
    long start = System.nanoTime();
    int[] done = {0};
    Progress progress = Progress.of(quiet.quiet, err, "sweep", "cells");
    e.run(file, todo, (cell, row) -> {
      SweepTable.storeRow(dir, cell.key(), row);
      done[0]++;
      if (progress != null) {
        progress.update(done[0], todo.size());
      }
    });
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("grid", grid.toString());
    config.put("cells", cells.size());
    if (calibration != null) {
      config.put("calibration", calibration.echo()); // only when given, so that other sweeps' tables stay as they were
    }
    SweepTableResults table = SweepTable.results(dir, cells.stream().map(GridSweep.Cell::key).toList(), config);
    kvsim.report.SweepTableSeeds bySeed = kvsim.report.SweepTableSeeds.of(table);
    if (!bySeed.severalSeeds()) {
      java.nio.file.Files.deleteIfExists(dir.resolve(kvsim.report.SweepTableSeeds.CSV_FILE)); // from an earlier grid of this folder with seeds
    }
    SweepTable.write(dir, table);
    if (bySeed.severalSeeds()) { // the cells over their seeds: median and interval (README, "Seeds and intervals")
      bySeed.write(dir);
      bySeed.print(out);
    }
    if (report.report()) {
      SweepChart.writeReport(dir); // report.html and a chart per headline metric, from sweep.json alone
    } else {
      // --no-report: the data files only, the marker listing what `kvsim report` may add (Note [Data files only] on report.ResultFolder)
      kvsim.report.ResultFolder.seal(dir, SweepChart.reportFiles(SweepTable.read(dir)));
    }
    out.printf("sweep: %,d cells in %.2f s (%,d run now)%nresults: %s (%s, %s%s)%n",
        table.rows().size(), (System.nanoTime() - start) / 1e9, todo.size(), dir, SweepTable.CSV_FILE, SweepTable.JSON_FILE,
        report.report() ? ", " + HtmlReport.FILE : "");
    out.flush();
    return KvSim.EXIT_OK;
  }
}
