// One instance at a time runs the nightly job, across every process and machine.
// Usage: mutex_example HOST:PORT
#include <zkr/zkr.hpp>

#include <iostream>
#include <mutex>

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;

    zkr::interprocess_mutex job_lock(client, "/jobs/nightly");
    if (!job_lock.try_lock_for(std::chrono::seconds(5))) {
        std::cout << "another instance runs the job\n";
        return 0;
    }
    std::unique_lock guard(job_lock, std::adopt_lock);  // released when guard goes
    std::cout << "running the job with fencing token " << job_lock.fencing_token() << '\n';
    // ... do the work; check job_lock.is_valid() before each irreversible step ...
    return 0;
}
