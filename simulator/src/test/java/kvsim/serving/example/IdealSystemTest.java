package kvsim.serving.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import kvsim.core.Bytes;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.regress.Suite;
import kvsim.serving.SchedulerConfig;
import kvsim.serving.ServingSystems;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Once registered, the example system is a system like the shipped ones: listed, built, echoed, and named in regression suites. */
class IdealSystemTest {
  @TempDir Path dir;

  @Test
  void oneRegistrationMakesItASystemEverywhere() throws IOException {
    Path suite = Files.writeString(dir.resolve("suite.yaml"), "version: 1\nscenarios:\n  - name: a\n    serving: requests:preset=sharegpt,count=5\n"
        + "    systems: [vllm, " + IdealKvManager.SYSTEM + "]\n    watch: [{metric: requests_finished, better: higher}]\n");
    InputException unknown = assertThrows(InputException.class, () -> Suite.read(suite));
    assertTrue(unknown.getMessage().contains("unknown system 'ideal'"), unknown.getMessage());
    IdealKvManager.register();
    try {
      assertEquals(List.of("vllm", IdealKvManager.SYSTEM), Suite.read(suite).scenarios().get(0).runs());
      assertTrue(ServingSystems.systems().stream().anyMatch(s -> s.name().equals(IdealKvManager.SYSTEM)));
      assertTrue(ServingSystems.reads(IdealKvManager.SYSTEM, "max-num-seqs"), "read by its scheduler");
      assertFalse(ServingSystems.reads(IdealKvManager.SYSTEM, "block-size"));
      assertEquals("ideal does not read block-size (vllm, vllm-v0 do)", ServingSystems.notRead(IdealKvManager.SYSTEM, "block-size"));
      ModelPreset model = ModelPreset.parse("opt-13b");
      ServingSystems.Built built = ServingSystems.build(IdealKvManager.SYSTEM,
          ServingSystems.Build.of(model, DeviceSpec.parse("a100-40"), Bytes.GiB, SchedulerConfig.defaults(1024)).build());
      Map<String, Object> parts = built.parts();
      assertEquals(List.of("scheduler", "models", "kv_manager", "max_num_batched_tokens", "max_num_seqs", "max_model_len", "enable_chunked_prefill",
          "scheduler_reserve_full_isl", "async_scheduling", "slots"),
          List.copyOf(parts.keySet()), "its parts come from its factories, its own after the known ones");
      assertEquals("ideal", parts.get("kv_manager"));
      assertEquals(Bytes.GiB / model.kvBytesPerToken(), parts.get("slots"));
    } finally {
      ServingSystems.unregister(IdealKvManager.SYSTEM);
    }
    assertThrows(InputException.class, () -> ServingSystems.get(IdealKvManager.SYSTEM));
  }
}
