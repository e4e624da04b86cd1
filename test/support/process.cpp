#include "process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <system_error>
#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace zkr::test {

std::vector<char*> c_argv(std::vector<std::string>& args) {
    std::vector<char*> out;
    for (auto& a : args) out.push_back(a.data());
    out.push_back(nullptr);
    return out;
}

child_process::child_process(std::vector<std::string> argv) {
    auto args = c_argv(argv);
    if (::posix_spawn(&pid_, args[0], nullptr, nullptr, args.data(), environ) != 0)
        throw std::runtime_error("cannot start " + argv.at(0));
}

child_process::~child_process() {
    if (pid_ > 0 && status_ < 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
}

int child_process::wait() {
    if (status_ >= 0 || pid_ <= 0) return status_;
    int st = 0;
    ::waitpid(pid_, &st, 0);
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return status_;
}

int child_process::wait_for(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (status_ < 0 && pid_ > 0) {
        int st = 0;
        if (::waitpid(pid_, &st, WNOHANG) == pid_) {
            status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            break;
        }
        if (std::chrono::steady_clock::now() > deadline) return -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status_;
}

void child_process::kill(int sig) {
    if (pid_ > 0 && status_ < 0) ::kill(pid_, sig);
}

std::vector<std::string> read_lines(const std::string& file) {
    std::vector<std::string> out;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

std::string tail_lines(const std::string& file, std::size_t n) {
    const auto lines = read_lines(file);
    std::string out;
    for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += "  " + lines[i] + "\n";
    return out;
}

std::vector<std::string> read_finished_lines(const std::string& file) {
    std::vector<std::string> out;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
        if (!in.eof()) out.push_back(line);  // getline met the newline, not the end of the file
    return out;
}

// The name has this process's id, and a file of that name can only be left by a dead process
// that had the same id (ids are reused: 32,768 of them here, and a test killed, or one that does
// not remove its files, leaves them in /tmp). Removed, so that the file is fresh: a counter left
// at 1 made "no lost update" read 61 of 60 increments.
std::string temp_file(const std::string& name) {
    static std::atomic<int> n{0};
    auto path = std::filesystem::temp_directory_path() /
                ("zkr-test-" + std::to_string(::getpid()) + "-" + name + "-" + std::to_string(n++));
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    return path.string();
}

}  // namespace zkr::test
