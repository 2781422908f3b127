#pragma once
// Issue 29: Slurm's advance reservations (`scontrol create reservation`, maintenance included) in
// the one queue. Pure: no I/O, time is an argument.
//
//   * Every pool node in a reservation that has not ended is unavailable over the reservation's
//     window (queue::Node::unavailable): the planner counts its whole capacity as used from start
//     to end, so no pod and no Slurm job is planned there across the window, whoever asks.
//   * While a reservation is active its nodes are also not schedulable and not lendable: nothing
//     onequeue starts, lends or preempts for lands there.
//   * A pending job that asks for a reservation (--reservation) is left to Slurm: onequeue neither
//     holds nor starts it (it is queued as held, with the reason `oq explain` shows); Slurm runs it
//     in its reservation when the reservation's nodes are Slurm's.
#include <string>

#include "queue/model.h"
#include "scheduler/slurm_world.h"
#include "slurm_bridge/model.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

// "Slurm reservation maint1 (MAINT) from 2026-11-27T10:00:00Z to 2026-11-27T12:00:00Z".
std::string DescribeReservation(const slurm::SlurmReservation& r);

// Marks the joined pool nodes (`records.nodes`, `records.k8s_of_slurm`) of every reservation of
// `view` that has not ended at `now`: a window of unavailability each; an active one also makes
// the node unschedulable and drops its lendable label.
void ApplyReservations(const slurm::SlurmView& view, const SlurmRecords& records, queue::Snapshot* snapshot,
                       queue::Time now);

// Why a pending job that names a reservation is left to Slurm: the message of its held state.
std::string LeftToSlurmMessage(const slurm::SlurmJob& job, const slurm::SlurmView& view);

}  // namespace onequeue::scheduler
