package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import kvsim.testing.CliRun;
import kvsim.trace.BinaryTraceFormat;
import kvsim.trace.L1BinaryReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Binary traces end to end: {@code generate}, {@code import} and {@code serving --emit-trace} write
 * them for a {@code .kvt}/{@code .kvr} name, {@code convert} turns them into the same JSONL bytes
 * and back, every command that reads a trace runs them with the same results, and a damaged one is
 * exit status 2 with one line and no output.
 */
class ConvertCommandTest {
  @TempDir Path dir;

  private static String firstLine(String s) {
    return s.strip().lines().findFirst().orElse("");
  }

  /** Writes the churn workload of {@code ops} operations and {@code seed} to each file, in its format. */
  private static void generateChurn(int ops, int seed, Path... files) {
    for (Path file : files) {
      CliRun.of("generate", "churn", "--ops", String.valueOf(ops), "--seed", String.valueOf(seed), "-o", file.toString()).ok();
    }
  }

  @Test
  void generateWritesBinaryThatConvertsToTheSameJsonlAndReplaysIdentically() throws IOException {
    Path jsonl = dir.resolve("c.jsonl");
    Path bin = dir.resolve("c.kvt");
    generateChurn(3000, 4, jsonl, bin);
    assertEquals(BinaryTraceFormat.Kind.L1_BINARY, BinaryTraceFormat.sniff(bin));
    assertTrue(Files.size(bin) * 4 < Files.size(jsonl), "binary is several times smaller");

    Path back = dir.resolve("back.jsonl");
    CliRun run = CliRun.of("convert", bin.toString(), back.toString()).ok();
    assertEquals("wrote 3000 events, JSONL L1 trace, to " + back + " (" + Files.size(back) + " bytes)", run.out().strip());
    assertArrayEquals(Files.readAllBytes(jsonl), Files.readAllBytes(back));
    Path again = dir.resolve("again.kvt");
    CliRun.of("convert", back.toString(), again.toString()).ok();
    assertArrayEquals(Files.readAllBytes(bin), Files.readAllBytes(again));

    // The same file name in two folders, one JSONL and one binary: the results are the same bytes.
    Files.createDirectories(dir.resolve("a"));
    Files.createDirectories(dir.resolve("b"));
    Files.copy(jsonl, dir.resolve("a/t"));
    Files.copy(bin, dir.resolve("b/t"));
    Path ra = dir.resolve("ra");
    Path rb = dir.resolve("rb");
    CliRun.of("replay", dir.resolve("a/t").toString(), "-a", "first-fit,slab", "--quiet", "-o", ra.toString()).ok();
    CliRun.of("replay", dir.resolve("b/t").toString(), "-a", "first-fit,slab", "--quiet", "-o", rb.toString()).ok();
    assertEquals(Files.readString(ra.resolve("summary.json")).replace(dir.resolve("a/t").toString(), "T"),
        Files.readString(rb.resolve("summary.json")).replace(dir.resolve("b/t").toString(), "T"));
    assertArrayEquals(Files.readAllBytes(ra.resolve("timeseries.csv")), Files.readAllBytes(rb.resolve("timeseries.csv")));
  }

  @Test
  void aLongBinaryTraceDecodedOnASpareCoreReplaysAsItsJsonl() throws IOException {
    // Long enough to be decoded ahead where a core is spare (Note [Decoded ahead in columns] on
    // L1BinaryReader); on one core both replays decode on the engine's thread.
    Path jsonl = dir.resolve("long.jsonl");
    Path bin = dir.resolve("long.kvt");
    generateChurn(600_000, 8, jsonl, bin);
    try (L1BinaryReader r = L1BinaryReader.open(bin)) {
      assertTrue(r.worthDecodingAhead(), Files.size(bin) + " bytes");
    }
    Path ra = dir.resolve("ra");
    Path rb = dir.resolve("rb");
    CliRun.of("replay", jsonl.toString(), "-a", "first-fit", "--quiet", "--no-report", "-o", ra.toString()).ok();
    CliRun.of("replay", bin.toString(), "-a", "first-fit", "--quiet", "--no-report", "-o", rb.toString()).ok();
    assertEquals(Files.readString(ra.resolve("summary.json")).replace(jsonl.toString(), "T").replace("long.jsonl", "T"),
        Files.readString(rb.resolve("summary.json")).replace(bin.toString(), "T").replace("long.kvt", "T"));
    assertArrayEquals(Files.readAllBytes(ra.resolve("timeseries.csv")), Files.readAllBytes(rb.resolve("timeseries.csv")));
    assertArrayEquals(Files.readAllBytes(ra.resolve("memory-map.json")), Files.readAllBytes(rb.resolve("memory-map.json")));
  }

  @Test
  void requestTracesConvertBothWaysAndServeIdentically() throws IOException {
    Path jsonl = dir.resolve("r.jsonl");
    Path bin = dir.resolve("r.kvr");
    CliRun.of("generate", "requests", "--count", "200", "--n", "2", "-o", jsonl.toString()).ok();
    CliRun.of("convert", jsonl.toString(), bin.toString()).ok();
    assertEquals(BinaryTraceFormat.Kind.REQUESTS_BINARY, BinaryTraceFormat.sniff(bin));
    Path gen = dir.resolve("gen.kvr");
    CliRun.of("generate", "requests", "--count", "200", "--n", "2", "-o", gen.toString()).ok();
    assertArrayEquals(Files.readAllBytes(bin), Files.readAllBytes(gen), "generate writes what convert writes");
    Path back = dir.resolve("back.jsonl");
    CliRun.of("convert", bin.toString(), back.toString()).ok();
    assertArrayEquals(Files.readAllBytes(jsonl), Files.readAllBytes(back));

    Path sa = dir.resolve("sa");
    Path sb = dir.resolve("sb");
    CliRun.of("serving", jsonl.toString(), "--system", "vllm", "-q", "-o", sa.toString()).ok();
    CliRun.of("serving", bin.toString(), "--system", "vllm", "-q", "-o", sb.toString()).ok();
    assertEquals(Files.readString(sa.resolve("summary.json")).replace(jsonl.toString(), "T").replace("r.jsonl", "T"),
        Files.readString(sb.resolve("summary.json")).replace(bin.toString(), "T").replace("r.kvr", "T"));
  }

  @Test
  void importAndEmitTraceWriteBinaryByName() throws IOException {
    Path csv = dir.resolve("az.csv");
    Files.writeString(csv, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.0000000,396,109\n");
    Path kvr = dir.resolve("az.kvr");
    CliRun.of("import", "azure", csv.toString(), "-o", kvr.toString()).ok();
    assertEquals(BinaryTraceFormat.Kind.REQUESTS_BINARY, BinaryTraceFormat.sniff(kvr));
    Path js = dir.resolve("az.jsonl");
    CliRun.of("import", "azure", csv.toString(), "-o", js.toString()).ok();
    Path back = dir.resolve("az-back.jsonl");
    CliRun.of("convert", kvr.toString(), back.toString()).ok();
    assertArrayEquals(Files.readAllBytes(js), Files.readAllBytes(back));

    Path ops = dir.resolve("ops.kvt");
    Path opsJson = dir.resolve("ops.jsonl");
    CliRun.of("serving", "requests:count=40", "--system", "vllm", "-q", "--emit-trace", ops.toString(), "-o", dir.resolve("s1").toString()).ok();
    CliRun.of("serving", "requests:count=40", "--system", "vllm", "-q", "--emit-trace", opsJson.toString(), "-o", dir.resolve("s2").toString()).ok();
    assertEquals(BinaryTraceFormat.Kind.L1_BINARY, BinaryTraceFormat.sniff(ops));
    Path opsBack = dir.resolve("ops-back.jsonl");
    CliRun.of("convert", ops.toString(), opsBack.toString()).ok();
    assertArrayEquals(Files.readAllBytes(opsJson), Files.readAllBytes(opsBack));
  }

  @Test
  void aDamagedBinaryTraceIsExitTwoWithOneLineAndNoOutput() throws IOException {
    Path bin = dir.resolve("c.kvt");
    CliRun.of("generate", "churn", "--ops", "200000", "-o", bin.toString()).ok();
    byte[] b = Files.readAllBytes(bin);
    Path cut = dir.resolve("cut.kvt");
    Files.write(cut, Arrays.copyOf(b, b.length / 2));
    Path out = dir.resolve("out.jsonl");
    CliRun run = CliRun.of("convert", cut.toString(), out.toString());
    assertEquals(2, run.exitCode());
    assertTrue(firstLine(run.err()).matches("kvsim: error: .*cut\\.kvt: truncated: the file ends inside block 1 \\(events from 65537\\) \\(\\d+ of \\d+ bytes\\)"), run.err());
    assertEquals(1, run.err().strip().lines().count(), run.err());
    assertFalse(Files.exists(out), "no partial output");

    Path res = dir.resolve("res");
    CliRun replay = CliRun.of("replay", cut.toString(), "-a", "slab", "--quiet", "-o", res.toString());
    assertEquals(2, replay.exitCode());
    assertTrue(replay.err().contains("cut.kvt: truncated: the file ends inside block 1"), replay.err());
    assertFalse(Files.exists(res.resolve("summary.json")), "no partial results");

    Path flipped = dir.resolve("flipped.kvt");
    b[b.length / 3] ^= 0x40;
    Files.write(flipped, b);
    CliRun bad = CliRun.of("replay", flipped.toString(), "-a", "slab", "--quiet", "-o", dir.resolve("res2").toString());
    assertEquals(2, bad.exitCode());
    assertTrue(bad.err().matches("(?s)kvsim: error: .*flipped\\.kvt: corrupt block \\d \\(events from \\d+\\): checksum mismatch\\s*"), bad.err());
  }

  @Test
  void namesOfTheOtherKindAndNonTracesAreRefused() throws IOException {
    Path l1 = dir.resolve("c.jsonl");
    CliRun.of("generate", "churn", "--ops", "100", "-o", l1.toString()).ok();
    CliRun wrong = CliRun.of("convert", l1.toString(), dir.resolve("c.kvr").toString());
    assertEquals(2, wrong.exitCode());
    assertEquals("kvsim: error: " + dir.resolve("c.kvr") + ": .kvr names a binary request trace; name an L1 trace .kvt (binary) or .jsonl", firstLine(wrong.err()));
    CliRun gen = CliRun.of("generate", "requests", "--count", "5", "-o", dir.resolve("r.kvt").toString());
    assertEquals(2, gen.exitCode());
    assertFalse(Files.exists(dir.resolve("r.kvt")));
    Path text = dir.resolve("notes.txt");
    Files.writeString(text, "hello\n");
    CliRun notTrace = CliRun.of("convert", text.toString(), dir.resolve("x.kvt").toString());
    assertEquals(2, notTrace.exitCode());
    assertTrue(notTrace.err().contains("notes.txt: not a kvsim trace"), notTrace.err());
    Path bin = dir.resolve("c.kvt");
    CliRun.of("convert", l1.toString(), bin.toString()).ok();
    CliRun serve = CliRun.of("serving", bin.toString(), "--system", "vllm", "-q", "-o", dir.resolve("s").toString());
    assertEquals(2, serve.exitCode());
    assertTrue(serve.err().contains("is a binary L1 trace (kvsim-l1), not a request trace"), serve.err());
    CliRun same = CliRun.of("convert", bin.toString(), bin.toString());
    assertEquals(2, same.exitCode());
    assertTrue(same.err().contains("is also an input of this command"), same.err());
  }
}
