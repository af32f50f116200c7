// Document 000 ("Avoid Await.result"): fib(n) where every call at or above the cutoff forks
// two futures on ExecutionContext.global and below it runs the sequential sfib.
//
//   Fib flatmap N CUTOFF   the document's first program: the continuation is registered
//                          with map/flatMap (a for expression) and the worker is released;
//   Fib await N CUTOFF     its second: the task blocks in Await.result on both children; the
//                          global pool adds compensation threads (up to
//                          scala.concurrent.context.maxExtraThreads, 256), then deadlocks;
//   Fib seq N CUTOFF       the sequential sfib(N) alone (CUTOFF is ignored): the baseline
//                          that the styles' times are divided by to compare languages.
//
// Prints one JSON line: {"result":R,"seconds":S,"rss_bytes":B,"peak_threads":T}, seconds
// from the first fork to the result, rss_bytes the peak resident set (VmHWM), peak_threads
// the JVM's peak live thread count. Before the clock starts, the JIT is warmed on the whole
// path the run takes: sfib, and for a style its futures, callbacks and Await on a small fib
// at the same cutoff. A deadlocked run prints nothing: the caller's timeout ends it.
import java.lang.management.ManagementFactory

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration.Duration
import scala.io.Source
import scala.util.Using

object Fib {
  implicit val ec: ExecutionContext = ExecutionContext.global

  var th: Int = 0

  def sfib(n: Int): Long = if (n < 2) n else sfib(n - 1) + sfib(n - 2)

  // The document's future.scala.
  def fibFlat(n: Int): Future[Long] =
    if (n < th) Future(sfib(n))
    else
      Future {
        val f1 = fibFlat(n - 1)
        val f2 = fibFlat(n - 2)
        for (x1 <- f1; x2 <- f2) yield x1 + x2
      }.flatten

  // The document's await.scala.
  def fibAwait(n: Int): Future[Long] =
    if (n < th) Future(sfib(n))
    else
      Future {
        val f1 = fibAwait(n - 1)
        val f2 = fibAwait(n - 2)
        val x1 = Await.result(f1, Duration.Inf)
        val x2 = Await.result(f2, Duration.Inf)
        x1 + x2
      }

  def vmHwmBytes(): Long =
    Using(Source.fromFile("/proc/self/status")) { src =>
      src.getLines().find(_.startsWith("VmHWM:")).map(_.split("\\s+")(1).toLong * 1024).getOrElse(0L)
    }.getOrElse(0L)

  def usage(): Nothing = {
    System.err.println("usage: Fib flatmap|await|seq N CUTOFF")
    sys.exit(2)
  }

  def main(args: Array[String]): Unit = {
    if (args.length != 3) usage()
    val style = args(0)
    val (n, cutoff) =
      try (args(1).toInt, args(2).toInt)
      catch { case _: NumberFormatException => usage() }
    if (n < 0 || n > 92 || cutoff < 2 || !Set("flatmap", "await", "seq").contains(style)) usage()
    th = cutoff
    def run(m: Int): Long = style match {
      case "seq"     => sfib(m)
      case "flatmap" => Await.result(fibFlat(m), Duration.Inf)
      case _         => Await.result(fibAwait(m), Duration.Inf)
    }
    // Warm-up of the whole path: a few tasks' worth above the cutoff (few enough that
    // Await.result cannot run out of threads), so that the JIT has compiled it.
    val warm = math.min(math.min(n, cutoff + 5), 25)
    var i = 0
    while (i < 5) { sfib(25); run(warm); i += 1 }
    val t0 = System.nanoTime()
    val r = run(n)
    val seconds = (System.nanoTime() - t0) / 1e9
    val peak = ManagementFactory.getThreadMXBean.getPeakThreadCount
    println(s"""{"result":$r,"seconds":$seconds,"rss_bytes":${vmHwmBytes()},"peak_threads":$peak}""")
    sys.exit(0)
  }
}
