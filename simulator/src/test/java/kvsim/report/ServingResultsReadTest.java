package kvsim.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A serving run's summary.json, with and without a what-if grid, reads back and writes out as the same bytes. */
class ServingResultsReadTest {
  @TempDir Path dir;

  private static String rewritten(ServingResults r) throws IOException {
    return ResultsWriter.json().writeValueAsString(ResultsWriter.servingSummary(r)) + "\n";
  }

  @Test
  void aGridRunReadsBackCellByCellAndRoundTripsByteForByte() throws IOException {
    Path out = dir.resolve("grid");
    CliRun.of("serving", "requests:preset=sharegpt,rate=4,count=60", "--system", "vllm,orca-oracle", "--set", "max-num-seqs=8,64",
        "--set", "kv-memory=20GiB,40GiB", "-q", "-o", out.toString()).ok();
    ServingResults r = ResultsReader.readServing(out);
    assertEquals(Map.of("max-num-seqs", List.of("8", "64"), "kv-memory", List.of("20GiB", "40GiB")), r.grid());
    assertEquals(8, r.entries().size());
    assertEquals("orca-oracle", r.entries().get(7).system());
    assertEquals(Map.of("max-num-seqs", "64", "kv-memory", "40GiB"), r.entries().get(7).cell());
    assertEquals(List.of("max-num-seqs", "kv-memory"), List.copyOf(r.entries().get(0).cell().keySet()));
    assertTrue(!r.config().containsKey("kv_memory_bytes"), "the cells differ in KV memory");
    assertEquals(Files.readString(out.resolve("summary.json"), StandardCharsets.UTF_8), rewritten(r));
  }

  @Test
  void aPlainRunReadsBackToo() throws IOException {
    Path out = dir.resolve("plain");
    CliRun.of("serving", "requests:preset=sharegpt,rate=4,count=40", "--system", "vllm,hf-naive", "-q", "-o", out.toString()).ok();
    ServingResults r = ResultsReader.readServing(out);
    assertEquals(Map.of(), r.grid());
    assertEquals(List.of("vllm", "hf-naive"), r.systems().stream().map(m -> m.get("system")).toList());
    assertEquals(Files.readString(out.resolve("summary.json"), StandardCharsets.UTF_8), rewritten(r));
  }

  @Test
  void whatIsReadBackWrittenAgainIsEqualAndGivesTheSameFilesAndCharts() throws IOException {
    Path out = dir.resolve("first");
    CliRun.of("serving", "requests:preset=sharegpt,rate=4,count=40", "--system", "vllm,orca-oracle", "--set", "max-num-seqs=8,64", "-q", "-o",
        out.toString()).ok();
    ServingResults first = ResultsReader.readServing(out);
    List<ServingResults.Timing> timings = List.of(new ServingResults.Timing("vllm max-num-seqs=8", 10, 1_000_000), new ServingResults.Timing(
        "orca-oracle max-num-seqs=8", 10, 1_000_000), new ServingResults.Timing("vllm max-num-seqs=64", 10, 0), new ServingResults.Timing(
        "orca-oracle max-num-seqs=64", 10, 2_000_000));
    Path again = ResultsWriter.writeServing(ResultFolder.Target.at(dir.resolve("again"), ResultFolder.Kind.SERVING, false).check(), first, timings);
    ServingResults second = ResultsReader.readServing(again);
    assertEquals(first.config(), second.config());
    assertEquals(first.grid(), second.grid());
    assertEquals(first.systems(), second.systems());
    assertEquals(first.seriesColumns(), second.seriesColumns());
    assertEquals(first.series().keySet(), second.series().keySet());
    first.series().forEach((k, rows) -> assertTrue(java.util.Arrays.deepEquals(rows.toArray(), second.series().get(k).toArray()), k));
    first.quantiles().forEach((k, rows) -> assertTrue(java.util.Arrays.deepEquals(rows.toArray(), second.quantiles().get(k).toArray()), k));
    for (String f : List.of("summary.json", "timeseries.csv", "latency-quantiles.csv", "kv-breakdown.svg", "kv-breakdown-bars.svg", "latency-cdf.svg",
        "batch-size.svg", "report.html")) {
      assertEquals(Files.readString(out.resolve(f)), Files.readString(again.resolve(f)), f);
    }
    ServingResults.Entry e = second.entries().get(0);
    assertEquals("vllm max-num-seqs=8", e.label());
    assertEquals(40, e.count("requests_arrived"));
    assertTrue(e.latency("ttft_seconds", "p50") > 0 && e.kvMeanShare("token_states") > 0, e.summary().toString());
    assertTrue(Files.readString(again.resolve("timing.json")).contains("\"iterations_per_second\" : 10000"));
  }

  @Test
  void aCellOutsideTheGridIsRefusedNamingTheField() throws IOException {
    Path out = dir.resolve("bad");
    CliRun.of("serving", "requests:preset=sharegpt,rate=4,count=20", "--set", "block-size=8,16", "-q", "-o", out.toString()).ok();
    Path summary = out.resolve("summary.json");
    Files.writeString(summary, Files.readString(summary).replaceFirst("\"block-size\" : \"16\"", "\"block-size\" : \"24\""));
    InputException e = assertThrows(InputException.class, () -> ResultsReader.readServing(out));
    assertTrue(e.getMessage().contains("systems[1].cell.block-size: '24' is not among the grid's values [8, 16]"), e.getMessage());
  }

  @Test
  void entriesWithOptionalFieldsAreTypedAndWriteOutAsTheSameObjects() throws IOException {
    Path out = dir.resolve("groups");
    CliRun.of("serving", "requests:preset=sharegpt,rate=4,count=30,beam=2", "--system", "vllm,hf-naive", "-q", "-o", out.toString()).ok();
    ServingResults r = ResultsReader.readServing(out);
    ServingResults.Entry vllm = r.entries().get(0);
    assertEquals(30, vllm.counts().requestsArrived());
    assertTrue(vllm.optional().containsKey("sequence_groups"), vllm.optional().keySet().toString());
    assertTrue(r.entries().get(1).optional().containsKey("activation_oom_count"), r.entries().get(1).optional().keySet().toString());
    assertEquals(vllm.latencies().get("ttft_seconds").p50(), vllm.latency("ttft_seconds", "p50"));
    assertEquals(List.of("token_states", "reserved_future", "internal_fragmentation", "external_fragmentation", "idle"), List.copyOf(vllm.kvBreakdown().shares().keySet()));
    // The names of folders written before idle memory was told apart still answer.
    assertEquals(vllm.kvMeanShare("internal_fragmentation"), vllm.kvMeanShare("internal_waste"));
    assertEquals(vllm.kvMeanShare("external_fragmentation") + vllm.kvMeanShare("idle"), vllm.kvMeanShare("external_waste"), 1e-15);
    assertEquals("steady state", vllm.kvBreakdownSteady().window().kind());
    assertEquals(1.0, vllm.kvBreakdownSteady().usedMemory().values().stream().mapToDouble(Double::doubleValue).sum(), 1e-9);
    // Each typed entry gives back the object read, field for field and in order: the file's bytes again.
    assertEquals(Files.readString(out.resolve("summary.json"), StandardCharsets.UTF_8), rewritten(r));
    ServingResults again = ServingResults.of(r.config(), r.grid(), r.systems(), r.seriesColumns(), r.series(), r.quantileColumns(), r.quantiles());
    assertEquals(r.entries(), again.entries());
  }

  @Test
  void aMalformedEntryIsRefusedNamingTheFieldAndReportExitsTwo() throws IOException {
    Path out = dir.resolve("malformed");
    CliRun.of("serving", "requests:preset=sharegpt,rate=4,count=20", "-q", "-o", out.toString()).ok();
    Path summary = out.resolve("summary.json");
    String good = Files.readString(summary);
    Files.writeString(summary, good.replaceFirst("\"requests_finished\" : \\d+", "\"requests_finished\" : -1"));
    InputException e = assertThrows(InputException.class, () -> ResultsReader.readServing(out));
    assertTrue(e.getMessage().startsWith(summary + ": systems[0].requests_finished: expected a non-negative integer, found -1"), e.getMessage());
    Files.writeString(summary, good.replaceFirst("\"p50\" : [^,]+,", "\"p50\" : \"x\","));
    e = assertThrows(InputException.class, () -> ResultsReader.readServing(out));
    assertTrue(e.getMessage().contains("systems[0].ttft_seconds.p50: expected a number or null, found \"x\""), e.getMessage());
    Files.writeString(summary, good.replaceFirst("\"kind\" : \"whole run\"", "\"kind\" : 3"));
    e = assertThrows(InputException.class, () -> ResultsReader.readServing(out));
    assertTrue(e.getMessage().contains("systems[0].kv_breakdown.window.kind: expected a string, found 3"), e.getMessage());
    Files.writeString(summary, good.replaceFirst("\"kv_breakdown_steady\" : \\{", "\"kv_breakdown_steady\" : [], \"x\" : {"));
    e = assertThrows(InputException.class, () -> ResultsReader.readServing(out));
    assertTrue(e.getMessage().contains("systems[0].kv_breakdown_steady: expected an object, found []"), e.getMessage());
    Files.writeString(summary, good.replaceFirst("\"kv_breakdown\" : \\{", "\"kv_breakdown_x\" : {"));
    CliRun report = CliRun.of("report", out.toString(), "-o", dir.resolve("r.html").toString());
    assertEquals(2, report.exitCode(), report.err());
    assertTrue(report.err().contains("summary.json: systems[0].kv_breakdown: missing"), report.err());
    assertTrue(!report.err().strip().contains("\n"), report.err());
  }
}
