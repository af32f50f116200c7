# Document 001's spawn chain, as in Programming Elixir ("the overhead of processes"): N
# processes, each receiving a number and sending number+1 to the next. Usage:
#   elixir --erl "+P <max processes>" chain.exs N
# Prints one JSON line with the result (must be N), the seconds of create_processes, and
# the peak RSS (VmHWM) of the BEAM.
defmodule Chain do
  def counter(next_pid) do
    receive do
      n -> send(next_pid, n + 1)
    end
  end

  def create_processes(n) do
    last = Enum.reduce(1..n, self(), fn _, send_to -> spawn(Chain, :counter, [send_to]) end)
    send(last, 0)

    receive do
      final_answer when is_integer(final_answer) -> final_answer
    end
  end

  def vm_hwm do
    case File.read("/proc/self/status") do
      {:ok, status} ->
        case Regex.run(~r/VmHWM:\s+(\d+) kB/, status) do
          [_, kb] -> String.to_integer(kb) * 1024
          _ -> 0
        end

      _ ->
        0
    end
  end

  def run(n) do
    {us, result} = :timer.tc(Chain, :create_processes, [n])
    IO.puts(~s({"result":#{result},"seconds":#{us / 1.0e6},"rss_bytes":#{vm_hwm()}}))
  end
end

[n] = System.argv()
Chain.run(String.to_integer(n))
