package kvsim.torch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import kvsim.testing.SharedData;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** Replays of the real recorded snapshots in ../shared/data (skipped when the folder is absent). */
class RealSnapshotReplayTest {

  @ParameterizedTest(name = "{0} replays with every address and segment decision matching")
  @ValueSource(
      strings = {
        "cs336_nothanmin_memory_snapshot.pickle",
        "cs336_wedsonlin_medium_128_inference.pickle",
        "cs336_wedsonlin_medium_1024_inference.pickle",
        "cs336_wedsonlin_medium_128_training.pickle",
      })
  void fullHistorySnapshotsMatchCompletely(String name) throws Exception {
    Path file = SharedData.require("torch-snapshots/" + name);
    ReplayReport r = ReplayVerifier.verify(SnapshotReader.read(file), ReplayVerifier.Options.defaults());
    assertNull(r.firstDivergence(), () -> String.valueOf(r.firstDivergence()));
    assertTrue(r.allocations() > 1000, "a full-history file has many allocations");
    assertEquals(r.allocations(), r.addressMatches());
    assertEquals(r.segmentDecisions(), r.segmentMatches());
    assertTrue(r.devices().get(0).finalStateMatches(), "the model ends with the file's segments and blocks");
    assertTrue(r.allMatched());
  }

  @Test
  void theMedium512TrainingRecordingStopsAtAnUnknowableRemainder() throws Exception {
    Path file = SharedData.require("torch-snapshots/cs336_wedsonlin_medium_512_training.pickle");
    ReplayReport r = ReplayVerifier.verify(SnapshotReader.read(file), ReplayVerifier.Options.defaults());
    ReplayReport.Divergence d = r.firstDivergence();
    assertNotNull(d);
    assertEquals(179, d.eventIndex(), "the first 179 events match");
    assertEquals("alloc", d.action());
    assertTrue(d.cause().contains("allocated before recording began") && d.cause().contains("unsplit remainder"), d.cause());
    assertTrue(d.cause().contains("with a remainder of 983040 B"), d.cause());
    assertTrue(d.state().contains("segment 0x8dce00000"), d.state());
    assertEquals(d.eventIndex(), r.devices().get(0).events() - 1, "the replay stops at the divergence");
  }
}
