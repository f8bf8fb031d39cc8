package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Note [One subcommand]: the command line main builds for a named subcommand reads as the whole command's. */
class OneSubcommandRootTest {
  private static String[] run(String... args) {
    CommandLine cl = KvSim.newCommandLine(args);
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int status = cl.execute(args);
    return new String[] {Integer.toString(status), out.toString(), err.toString()};
  }

  @Test
  void aNamedSubcommandGetsARootHoldingItAlone() {
    assertEquals(java.util.Set.of("sweep"), KvSim.newCommandLine(new String[] {"sweep", "--help"}).getSubcommands().keySet());
    assertTrue(KvSim.newCommandLine(new String[] {"--help"}).getSubcommands().keySet().containsAll(java.util.Set.of("replay", "sweep", "serving")));
  }

  @Test
  void helpUsageAndErrorsReadAsWithTheWholeCommand() {
    String[] help = run("replay", "--help");
    assertEquals("0", help[0]);
    assertTrue(help[1].startsWith("Usage: kvsim replay"), help[1]);
    String[] bad = run("replay", "churn:ops=10", "--no-such-option");
    assertEquals("2", bad[0]);
    assertTrue(bad[2].contains("Try 'kvsim replay --help' for more information."), bad[2]);
    String[] whole = run("replay", "churn:ops=10", "--no-such-option");
    CommandLine full = KvSim.newCommandLine();
    StringWriter err = new StringWriter();
    full.setErr(new PrintWriter(err));
    assertEquals(2, full.execute("replay", "churn:ops=10", "--no-such-option"));
    assertEquals(err.toString(), whole[2]);
  }

  @Test
  void theVersionAloneNeedsNoSubcommandAndReadsAsTheWholeCommands() {
    for (String flag : new String[] {"--version", "-V"}) {
      assertTrue(KvSim.newCommandLine(new String[] {flag}).getSubcommands().isEmpty(), flag);
      String[] version = run(flag);
      CommandLine full = KvSim.newCommandLine();
      StringWriter out = new StringWriter();
      full.setOut(new PrintWriter(out));
      assertEquals(0, full.execute(flag));
      assertEquals("0", version[0]);
      assertEquals(out.toString(), version[1]);
      assertTrue(version[1].startsWith("kvsim "), version[1]);
    }
  }
}
