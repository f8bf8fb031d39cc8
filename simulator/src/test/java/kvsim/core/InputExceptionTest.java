package kvsim.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Note [One-line messages]: whatever a message quotes from the input, it stays one line of bounded length. */
class InputExceptionTest {

  @Test
  void lineBreaksInAMessageAreWrittenEscaped() {
    assertEquals("t.jsonl:2: a\\nb\\r: unknown field", InputException.at("t.jsonl", 2, "a\nb\r", "unknown field").getMessage());
    assertEquals("plain", new InputException("plain").getMessage());
  }

  @Test
  void aHugeMessageIsCutSayingHowMuchWasLeftOut() {
    String m = InputException.at("t.jsonl", 7, "op", "unknown op \"" + "a".repeat(200_000) + "\"").getMessage();
    assertTrue(m.startsWith("t.jsonl:7: op: unknown op \"aaa"), m.substring(0, 40));
    assertTrue(m.endsWith("... (198028 more characters)"), m.substring(m.length() - 40));
    assertEquals(InputException.MAX_MESSAGE_CHARS + "... (198028 more characters)".length(), m.length());
  }

  @Test
  void aCutNeverSplitsASurrogatePair() {
    String m = new InputException("x".repeat(InputException.MAX_MESSAGE_CHARS - 1) + "\uD83D\uDE00" + "tail").getMessage();
    assertTrue(m.startsWith("x".repeat(InputException.MAX_MESSAGE_CHARS - 1) + "... ("), m.substring(m.length() - 30));
  }
}
