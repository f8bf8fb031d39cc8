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
}
