package kvsim.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** Bad block scripts that fuzzing found (ReaderFuzzTest): each is refused with one line naming file, line and field. */
class BlockScriptRunnerTest {

  private static String error(String script) {
    BlockScriptRunner runner = new BlockScriptRunner("s.jsonl", true);
    return assertThrows(InputException.class,
        () -> runner.run(new ByteArrayInputStream(script.getBytes(StandardCharsets.UTF_8)), OutputStream.nullOutputStream())).getMessage();
  }

  // An unknown field whose name holds an escaped line break made a two-line message.
  @Test
  void aLineBreakInAFieldNameStaysOnTheMessagesOneLine() {
    assertEquals("s.jsonl:2: \\n: unknown field for op add (known: cache_salt, hash_ids, lora, op, prompt, prompt_range, req)",
        error("{\"op\":\"config\",\"num_blocks\":7,\"block_size\":2}\n{\"op\":\"add\",\"req\":\"A\",\"prompt_range\":[0,7],\"\\n\":[]}\n"));
  }

  /** A script of {@code n} operations after config: each adds a request, then frees it. */
  private static StringBuilder script(int n) {
    StringBuilder sb = new StringBuilder("{\"op\":\"config\",\"num_blocks\":16,\"block_size\":4}\n");
    for (int k = 0; sb.length() > 0 && k < n; k += 2) {
      sb.append("{\"op\":\"add\",\"req\":\"R").append(k).append("\",\"prompt\":[1,2,3,4,5]}\n");
      sb.append("{\"op\":\"free\",\"req\":\"R").append(k).append("\"}\n");
    }
    return sb;
  }

  // Note [Parsing ahead]: lines are parsed ahead of the operations, on another thread; each
  // problem is still reported at its own line, the first one in the script first.
  @Test
  void anOperationThatFailsIsReportedBeforeAMalformedLineAfterIt() {
    assertEquals("s.jsonl:2: req: unknown request 'Z' (never added, or already freed)",
        error("{\"op\":\"config\",\"num_blocks\":16,\"block_size\":4}\n{\"op\":\"free\",\"req\":\"Z\"}\n{\"op\":\n"));
  }

  @Test
  void aMalformedLineFarAheadIsReportedAtItsLineAfterEveryOperationBeforeIt() {
    // 2,000 operations: several batches of parsed lines before the bad one.
    StringBuilder sb = script(2000).append("{\"op\":\"free\",\"req\":}\n").append(script(10));
    assertEquals("s.jsonl:2002: malformed JSON: unexpected '}' (expected a value)", error(sb.toString()));
    sb = script(2000).append("{\"op\":\"free\",\"req\":\"R0\"}\n{\"op\":\n");
    assertEquals("s.jsonl:2002: req: unknown request 'R0' (never added, or already freed)", error(sb.toString()));
  }

  @Test
  void theParserThreadIsGoneWhenARunEndsEitherWay() throws Exception {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    new BlockScriptRunner("s.jsonl", false).run(new ByteArrayInputStream(script(3000).toString().getBytes(StandardCharsets.UTF_8)), out);
    assertEquals(3001, out.toString(StandardCharsets.UTF_8).lines().count());
    error("{\"op\":\"config\",\"num_blocks\":16,\"block_size\":4}\n{\"op\":\"free\",\"req\":\"Z\"}\n" + script(50_000));
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      assertEquals(false, t.getName().equals("kvsim-blocks-parser") && t.isAlive(), "a parser thread outlived its run");
    }
  }
}
