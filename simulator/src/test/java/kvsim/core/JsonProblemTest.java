package kvsim.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Jackson's complaints about bad JSON in kvsim's words ({@link JsonProblem}), from the parser's real messages. */
class JsonProblemTest {
  private static String problemWith(String json) {
    try {
      new ObjectMapper().readTree(json);
    } catch (JsonProcessingException e) {
      return JsonProblem.plain(e.getOriginalMessage());
    }
    throw new AssertionError("parsed: " + json);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '~',
      value = {
        "alloc 1 {bad                 | 'alloc' is not a JSON value (expected a string in double quotes, a number, an array, an object, true, false or null)",
        "{\"a\": x}                   | 'x' is not a JSON value (expected a string in double quotes, a number, an array, an object, true, false or null)",
        "{\"a\": 1,}                  | expected a field name in double quotes, found '}' (a trailing comma?)",
        "{\"a\": 1 \"b\": 2}          | expected ',' between fields or '}' at the end, found '\"'",
        "{\"a\" 1}                    | expected ':' after the field name, found '1'",
        "[1 2]                        | expected ',' between values or ']' at the end, found '2'",
        "{\"a\": 1]                   | ']' where '}' should close what was opened",
        "{\"a\": 1                    | the line ends inside an object or array (missing '}' or ']')",
        "{\"a\": \"x\\qy\"}           | '\\q' is not a JSON escape (those are \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX)",
        "{\"a\": 99999999999999999999999} | ",
      })
  void saysWhatIsWrongInPlainWords(String json, String expected) {
    if (expected == null) {
      return; // a big integer is valid JSON for the tree parser: nothing to say
    }
    assertEquals(expected, problemWith(json));
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '~',
      value = {
        "{\"a\": 1\u2028}",
        "{\"a\": \"\u0001\"}",
        "{\"a\": 01}",
        "{\"a\": NaN}",
        "{\"a\": -}",
      })
  void neverQuotesTheParsersOwnWordsNorBreaksTheLine(String json) {
    String m = problemWith(json);
    for (String raw : new String[] {"Unrecognized token", "was expecting", "(code ", "CTRL-CHAR", "at [Source", "\n", "\r", "\u2028"}) {
      assertFalse(m.contains(raw), raw + " in: " + m);
    }
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '~',
      value = {
        "Cannot deserialize value of type `java.lang.Long` from String \"f\": not a valid `java.lang.Long` value | expected an integer, got the text \"f\"",
        "Cannot deserialize value of type `java.util.ArrayList<java.lang.String>` from Object value (token `JsonToken.START_OBJECT`) | expected a list, got a mapping",
        "class java.lang.String cannot be cast to class java.util.Map | class String cannot be cast to class Map",
      })
  void javaTypeNamesBecomeWords(String message, String expected) {
    assertEquals(expected, JsonProblem.javaTypes(message));
  }
}
