package kvsim.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** {@code submit} and {@code step}: vLLM v1's scheduler ({@code Scheduler.schedule}, {@code vllm/v1/core/sched/scheduler.py} @ec5ef0a) seen through a script, one rule per test. */
class BlockScriptStepTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final BlockScriptRunner runner = new BlockScriptRunner("s.jsonl", true);
  private long lineNo;

  private JsonNode run(String line) {
    try {
      return JSON.readTree(runner.execute(line, ++lineNo));
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  private JsonNode step() {
    return run("{\"op\":\"step\"}");
  }

  private static String text(JsonNode n) {
    return n.toString();
  }

  @Test
  void aLongPromptIsPrefilledInChunksOfTheBudgetAndSamplesOnlyWhenCaughtUp() {
    run("{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"max_num_batched_tokens\":4}");
    run("{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[0,10],\"max_tokens\":2}");
    JsonNode s0 = step();
    assertEquals("{\"A\":4}", text(s0.get("scheduled")));
    assertEquals("{\"A\":[1]}", text(s0.get("new_block_ids")));
    assertEquals("{\"A\":4}", text(step().get("scheduled")));
    JsonNode s2 = step();
    assertEquals("{\"A\":2}", text(s2.get("scheduled")));
    assertEquals("{\"A\":[3]}", text(s2.get("new_block_ids")));
    JsonNode state = run("{\"op\":\"state\"}");
    // 10 prompt tokens computed, then one sampled: 11 tokens, 10 computed.
    assertEquals(11, state.get("requests").get(0).get("num_tokens").asInt());
    assertEquals(10, state.get("requests").get(0).get("num_computed_tokens").asInt());
    assertEquals("{\"A\":1}", text(step().get("scheduled")));
  }

  @Test
  void longPrefillTokenThresholdCapsOneRequestPerStep() {
    run("{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"long_prefill_token_threshold\":3}");
    run("{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[0,7],\"max_tokens\":1}");
    run("{\"op\":\"submit\",\"req\":\"B\",\"prompt_range\":[10,12],\"max_tokens\":1}");
    assertEquals("{\"A\":3,\"B\":2}", text(step().get("scheduled")));
    assertEquals("{\"A\":3}", text(step().get("scheduled")));
  }

  @Test
  void withoutChunkedPrefillAPromptThatDoesNotFitTheBudgetLeftWaits() {
    run("{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"max_model_len\":8,\"max_num_batched_tokens\":8,"
        + "\"enable_chunked_prefill\":false}");
    run("{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[0,5],\"max_tokens\":2}");
    run("{\"op\":\"submit\",\"req\":\"B\",\"prompt_range\":[10,15],\"max_tokens\":2}");
    JsonNode s0 = step();
    assertEquals("{\"A\":5}", text(s0.get("scheduled")));
    assertEquals("[\"B\"]", text(s0.get("waiting")));
    assertEquals("{\"A\":1,\"B\":5}", text(step().get("scheduled")));
  }

  @Test
  void whenBlocksRunOutTheLastRunningRequestIsPreemptedAndNothingIsAdmitted() {
    run("{\"op\":\"config\",\"num_blocks\":5,\"block_size\":4}");
    run("{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[0,8],\"max_tokens\":3}");
    run("{\"op\":\"submit\",\"req\":\"B\",\"prompt_range\":[100,108],\"max_tokens\":3}");
    JsonNode s0 = step();
    assertEquals("{\"A\":[1,2],\"B\":[3,4]}", text(s0.get("new_block_ids")));
    run("{\"op\":\"submit\",\"req\":\"C\",\"prompt_range\":[200,201],\"max_tokens\":1}");
    JsonNode s1 = step();
    // A's 9th token needs a third block: B, the last running, is preempted, its blocks freed
    // tail first, and A takes block 4 from the head of the queue.
    assertEquals("{\"A\":1}", text(s1.get("scheduled")));
    assertEquals("{\"A\":[4]}", text(s1.get("new_block_ids")));
    assertEquals("[\"B\"]", text(s1.get("preempted")));
    assertEquals("[\"A\"]", text(s1.get("running")));
    // C would fit in block 3, but a step that preempted admits nothing; B goes first.
    assertEquals("[\"B\",\"C\"]", text(s1.get("waiting")));
    assertEquals("[3]", text(s1.get("free_queue")));
  }

  @Test
  void aSecondRequestHitsTheFirstsCachedBlocks() {
    run("{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4}");
    run("{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[0,10],\"max_tokens\":5}");
    step();
    run("{\"op\":\"submit\",\"req\":\"B\",\"prompt\":[0,1,2,3,4,5,6,7,9,9],\"max_tokens\":5}");
    JsonNode s1 = step();
    assertEquals("{\"A\":1,\"B\":2}", text(s1.get("scheduled")));
    assertEquals("{\"A\":[],\"B\":[1,2,4]}", text(s1.get("new_block_ids")));
    assertEquals(8, s1.get("prefix_cache").get("hits").asInt());
  }

  @Test
  void maxNumSeqsLimitsTheRunningRequests() {
    run("{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4,\"max_num_seqs\":1}");
    run("{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[0,3],\"max_tokens\":2}");
    run("{\"op\":\"submit\",\"req\":\"B\",\"prompt_range\":[10,13],\"max_tokens\":1}");
    JsonNode s0 = step();
    assertEquals("{\"A\":3}", text(s0.get("scheduled")));
    assertEquals("[\"B\"]", text(s0.get("waiting")));
    JsonNode s1 = step();
    assertEquals("{\"A\":1}", text(s1.get("scheduled")));
    assertEquals("[\"A\"]", text(s1.get("finished")));
    assertEquals("[\"B\"]", text(s1.get("waiting")));
    assertEquals("{\"B\":3}", text(step().get("scheduled")));
  }

  @Test
  void aRequestThatReachesMaxTokensFinishesAndIsFreed() {
    run("{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4}");
    run("{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[0,6],\"max_tokens\":2}");
    JsonNode s0 = step();
    assertEquals("[]", text(s0.get("finished")));
    assertEquals(6, s0.get("num_free_blocks").asInt());
    JsonNode s1 = step();
    assertEquals("[\"A\"]", text(s1.get("finished")));
    assertEquals("[]", text(s1.get("running")));
    assertEquals(8, s1.get("num_free_blocks").asInt());
    assertEquals("[3,4,5,6,7,8,2,1]", text(s1.get("free_queue")));
    assertEquals("[]", text(run("{\"op\":\"state\"}").get("requests")));
    // Finished and freed: the name is free again, for a direct add.
    run("{\"op\":\"add\",\"req\":\"A\",\"prompt\":[1]}");
  }

  /** Returns the tokens a later request must repeat to hit every full block of A's prompt and output. */
  private List<Integer> firstRequestsTokens(String outputField, int... prompt) {
    run("{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4}");
    StringBuilder p = new StringBuilder();
    List<Integer> tokens = new ArrayList<>();
    for (int t : prompt) {
      p.append(p.length() == 0 ? "" : ",").append(t);
      tokens.add(t);
    }
    run("{\"op\":\"submit\",\"req\":\"A\",\"prompt\":[" + p + "],\"max_tokens\":6" + outputField + "}");
    for (int k = 0; k < 6; k++) {
      step();
    }
    return tokens;
  }

  private JsonNode submitB(List<Integer> tokens) {
    StringBuilder p = new StringBuilder();
    for (int t : tokens) {
      p.append(p.length() == 0 ? "" : ",").append(t);
    }
    run("{\"op\":\"submit\",\"req\":\"B\",\"prompt\":[" + p + "],\"max_tokens\":1}");
    return step();
  }

  @Test
  void theGivenOutputTokensAreTheOnesAppended() {
    List<Integer> tokens = firstRequestsTokens(",\"output\":[7,8,9,10,11,12]", 1, 2, 3);
    // A computed 1 2 3 7 | 8 9 10 11 (its last sample, 12, ends it): two cached blocks, which B
    // hits whole since its ninth token (99) is the one it must compute.
    tokens.addAll(List.of(7, 8, 9, 10, 11, 99));
    JsonNode s = submitB(tokens);
    assertEquals(8, s.get("prefix_cache").get("hits").asInt(), s.toString());
  }

  @Test
  void withoutAnOutputListTheKthOutputTokenIs50000PlusK() {
    List<Integer> tokens = firstRequestsTokens("", 1, 2, 3);
    tokens.addAll(List.of(50000, 50001, 50002, 50003, 50004, 99));
    JsonNode s = submitB(tokens);
    assertEquals(8, s.get("prefix_cache").get("hits").asInt(), s.toString());
  }

  @Test
  void directBlockOperationsOnASubmittedRequestAreRefused() {
    run("{\"op\":\"config\",\"num_blocks\":9,\"block_size\":4}");
    run("{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[0,6],\"max_tokens\":2}");
    InputException e = assertThrows(InputException.class, () -> run("{\"op\":\"free\",\"req\":\"A\"}"));
    assertTrue(e.getMessage().contains("s.jsonl:3: req: request 'A' was submitted"), e.getMessage());
    e = assertThrows(InputException.class, () -> run("{\"op\":\"add\",\"req\":\"A\",\"prompt\":[1]}"));
    assertTrue(e.getMessage().contains("s.jsonl:4: req:"), e.getMessage());
    e = assertThrows(InputException.class, () -> run("{\"op\":\"submit\",\"req\":\"A\",\"prompt\":[1],\"max_tokens\":1}"));
    assertTrue(e.getMessage().contains("s.jsonl:5: req: request 'A' already exists"), e.getMessage());
  }

  @Test
  void directlyAddedRequestsHoldTheirBlocksBesideTheScheduler() {
    run("{\"op\":\"config\",\"num_blocks\":5,\"block_size\":4}");
    run("{\"op\":\"add\",\"req\":\"X\",\"prompt_range\":[0,12]}");
    run("{\"op\":\"admit\",\"req\":\"X\"}");
    run("{\"op\":\"submit\",\"req\":\"A\",\"prompt_range\":[100,108],\"max_tokens\":1}");
    JsonNode s0 = step();
    assertEquals("{}", text(s0.get("scheduled")));
    assertEquals("[\"A\"]", text(s0.get("waiting")));
    run("{\"op\":\"free\",\"req\":\"X\"}");
    assertEquals("{\"A\":8}", text(step().get("scheduled")));
  }
}
