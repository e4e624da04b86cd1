// Child processes for multi-process tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace zkr::test {

class child_process {
public:
    explicit child_process(std::vector<std::string> argv);
    ~child_process();  // kills the child if it still runs
    child_process(child_process&& o) noexcept : pid_(o.pid_), status_(o.status_) { o.pid_ = -1; }
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;
    /// Waits for the exit; the exit code, or 128 + signal.
    int wait();
    /// Waits at most timeout; the exit code as wait() gives it, or -1 if it still runs.
    int wait_for(std::chrono::milliseconds timeout);
    void kill(int sig);
    pid_t pid() const { return pid_; }

private:
    pid_t pid_ = -1;
    int status_ = -1;
};

/// argv for exec/posix_spawn: pointers into args (which must outlive them), null-terminated.
/// Built before a fork: the child of a threaded process must not allocate.
std::vector<char*> c_argv(std::vector<std::string>& args);

/// Lines of a file.
std::vector<std::string> read_lines(const std::string& file);

/// The last n lines of a file, each indented by two spaces, for a failure message.
std::string tail_lines(const std::string& file, std::size_t n);

/// Lines of a file another process is still appending to: only lines whose newline is written.
/// A reader can see a write in part (a line that crosses a page boundary is copied page by page),
/// so the last line without its newline is left out; it is read whole on a later call.
std::vector<std::string> read_finished_lines(const std::string& file);

/// A fresh temporary file path (the file does not exist yet).
std::string temp_file(const std::string& name);

}  // namespace zkr::test
