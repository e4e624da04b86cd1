// Everything of zkr in one include.
#pragma once

#include <zkr/acl.hpp>
#include <zkr/cancellation_link.hpp>
#include <zkr/client.hpp>
#include <zkr/client_options.hpp>
#include <zkr/connection_state.hpp>
#include <zkr/create_options.hpp>
#include <zkr/error.hpp>
#include <zkr/fair_lock.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/hold_view.hpp>
#include <zkr/interprocess_mutex.hpp>
#include <zkr/interprocess_read_write_lock.hpp>
#include <zkr/interprocess_semaphore_mutex.hpp>
#include <zkr/interprocess_semaphore_v2.hpp>
#include <zkr/leader_latch.hpp>
#include <zkr/lease.hpp>
#include <zkr/lock_hold.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/path.hpp>
#include <zkr/results.hpp>
#include <zkr/retry_policy.hpp>
#include <zkr/shared_count.hpp>
#include <zkr/stat.hpp>
#include <zkr/timed_lockable.hpp>
#include <zkr/watch_event.hpp>
