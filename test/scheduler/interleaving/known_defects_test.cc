// Issue 24: the defects the interleaving checker found, each as its shrunk scenario (seed, setup
// and steps, printed by Checker::AsCode) that must run without a violation once the defect is
// fixed. H1, H2, H3, D1, D2, D3, M1, C1, G3 and the later ones are fixed and run (each failed before
// its fix); their fault kinds are on in AMillionStepsKeepEveryInvariant.
#include <gtest/gtest.h>

#include "checker.h"

namespace onequeue::scheduler {
namespace {

using S = StepKind;

// Every defect's fault kinds on but for the defects named open.
KnownOpenDefects AllBut(std::initializer_list<bool KnownOpenDefects::*> on) {
  KnownOpenDefects off = KnownOpenDefects::All();
  for (bool KnownOpenDefects::*d : on) off.*d = false;
  return off;
}

void ExpectClean(const Scenario& s, KnownOpenDefects off) {
  const Checker checker(off);
  std::optional<Failure> f = checker.Run(s);
  EXPECT_FALSE(f.has_value()) << "(" << (f ? f->violation.invariant : ' ') << ") "
                              << (f ? f->violation.message : "") << "\n"
                              << checker.Story(s);
}

// H1 (issue 24), restart before the first Slurm poll: daemon #1 crashes after reserving n1
// (lent, Slurm job 1 running) for interactive pod ns/jupyter3; the restarted daemon's first cycle
// runs before its first poll and binds the pod on n1 beside job 1 -> (a).
TEST(KnownDefectsTest, H1_ARestartedDaemonBindsNothingBesideASlurmJobBeforeItsFirstPoll) {
  ExpectClean({841, {"placeholder", {2, 2, 1, 1}, 0, 0},
               {{S::kCycle, 24912}, {S::kInteractivePod, 27644}, {S::kCrashAt, 180}, {S::kPoll, 28589},
                {S::kCycle, 52621}, {S::kRestart, 27214}, {S::kCycle, 21558}}},
              AllBut({&KnownOpenDefects::h1, &KnownOpenDefects::d1, &KnownOpenDefects::d3}));  // d1, d3: its crash after the reserve
}

// H2 (issue 24), a refused requeue is never retried: srun job 1 (Slurm will not requeue it) runs
// on n1, lent; interactive pod ns/jupyter1 reserves n1 and the requeue is refused; nothing is
// tried again: job 1 keeps running on the reserved node through 8 healthy cycles -> (c).
// (Written from the story of seed 53 of the h2 hunt, without its deletion of the preemptor.)
TEST(KnownDefectsTest, H2_AVictimWhoseRequeueIsRefusedIsCancelledOrTheReservationUndone) {
  Scenario s{2, {"drain", {0}, 0, 0}, {{S::kSrunJobSubmitted, 1}}};
  for (int i = 0; i < 7; ++i) s.steps.insert(s.steps.end(), {{S::kPoll, 0}, {S::kCycle, 0}});
  s.steps.push_back({S::kInteractivePod, 0});
  for (int i = 0; i < 12; ++i) s.steps.insert(s.steps.end(), {{S::kPoll, 0}, {S::kCycle, 0}});
  ExpectClean(s, AllBut({&KnownOpenDefects::h2}));
}

// H3 (issue 24), returned without a live check: n1 is lent, its job completes; 40 s later, just
// after a poll, Slurm's own scheduler starts job 2 there; the cycle fences n1 (drain: job 2 keeps
// running) and marks it kubernetes without asking Slurm whether anything runs there -> (a).
TEST(KnownDefectsTest, H3_ANodeIsReturnedToKubernetesOnlyWhenSlurmSaysNothingRunsThere) {
  Scenario s{3, {"drain", {2}, 0, 0}, {{S::kPoll, 0}, {S::kCycle, 0}, {S::kJobFinishes, 0}}};
  for (int i = 0; i < 8; ++i) s.steps.insert(s.steps.end(), {{S::kPoll, 0}, {S::kCycle, 0}});
  s.steps.insert(s.steps.end(), {{S::kPoll, 0}, {S::kJobSubmitted, 1}, {S::kSlurmSchedules, 0}, {S::kCycle, 0}});
  for (int i = 0; i < 4; ++i) s.steps.insert(s.steps.end(), {{S::kPoll, 0}, {S::kCycle, 0}});
  ExpectClean(s, AllBut({&KnownOpenDefects::h3}));
}

// D1 (found by the checker, seed 1291 of the CI run before d1 was switched off): daemon #1 crashes
// after reserving n1 (lent, Slurm job 1 running) for ns/jupyter2, before the requeue; its
// successor binds the pod on n4, freed meanwhile, and ReleaseFinishedReservations gives n1 to
// kubernetes (fence, owner) with no live check while job 1 still runs there -> (a). Same defect,
// other paths: seeds 2961 (crash, restart) and 3063 (a start the poll had not shown yet).
// Fixed: the one Release path asks Slurm (SlurmLending::FenceForKubernetes, H3's live check).
TEST(KnownDefectsTest, D1_AReleasedReservationDoesNotGiveKubernetesANodeASlurmJobRunsOn) {
  ExpectClean({1291, {"drain", {2, 2, 2, 2}, 1, 1},
               {{S::kJobFinishes, 38211}, {S::kCrashAt, 26838}, {S::kInteractivePod, 49745}, {S::kCycle, 53351},
                {S::kSuccessor, 16734}, {S::kCycle, 927}, {S::kCycle, 34326}}},
              AllBut({&KnownOpenDefects::d1, &KnownOpenDefects::d3}));  // d3: its crash after the reserve
}

// D2 (found by the checker, seed 3063 of the CI run): Slurm job 1 is requeued for ns/jupyter1's
// reservation of n1, then onequeue starts it again on n3; interactive ns/jupyter3 reserves n3 and
// job 1 is not requeued again (probable cause, from reading, not yet confirmed: job 1 is still in
// evicted_, which Slurm victims leave only when no reservation is evicting); jupyter3 is bound on
// n1 and n3 is released to kubernetes under job 1 -> (a). The whole generated run (seed 3063, 250 steps) with the CI run's switches.
TEST(KnownDefectsTest, D2_AJobRequeuedOnceIsRequeuedAgainWhenItIsTheVictimOfAnotherPreemption) {
  const Checker checker(KnownOpenDefects::All());
  ExpectClean(checker.Generate(3063, 250), KnownOpenDefects::All());
}

// M1 (issue 24), Slurm writes fenced only when they start: slurmrestd hangs, the lease can no
// longer be renewed (ends at t+10s); the cycle's hold of job 2 was admitted at t+0s and lands at
// t+60s, after the lease -> (e). Seed 33 of the m1 hunt, shrunk to 3 steps. Fixed: every Slurm
// write is bounded by the writer's lease (WritePermit::WriteTimeLeft, RestClient::BoundWrites).
TEST(KnownDefectsTest, M1_NoSlurmWriteLandsAfterTheLease) {
  ExpectClean({33, {"placeholder", {0, 2, 1}, 0, 2}, {{S::kSlurmHang, 0}, {S::kLoseLease, 0}, {S::kCycle, 0}}},
              AllBut({&KnownOpenDefects::m1}));
}

// D3 (found by the checker, seed 979 of the CI run once D1 and M1 were switched on; also 1193,
// 1220): Reserve wrote n1's owner reserved/ns/jupyter2 first and the Slurm fence after it;
// daemon #1 crashed between the two (preempt-after-reserve, then before the fence). n1 was lent
// (drain, not fenced): job 1 completes and Slurm's own scheduler starts job 2 on n1 while it is
// reserved -> (b). Failed before its fix; fixed: the fence comes first
// (PreemptionExecutor::FenceForReservation), so a crash after the mark leaves n1 fenced.
TEST(KnownDefectsTest, D3_ACrashBetweenTheReservationAndItsFenceLetsSlurmStartAJobThere) {
  ExpectClean({979, {"drain", {2, 0}, 0, 2},
               {{S::kInteractivePod, 57369}, {S::kPoll, 0}, {S::kCrashAt, 38664}, {S::kInteractivePod, 15012},
                {S::kCycle, 21871}, {S::kJobFinishes, 54364}, {S::kSlurmSchedules, 45343}}},
              AllBut({&KnownOpenDefects::d3, &KnownOpenDefects::d1}));  // d1: its crash after the reserve
}

// D3, the other half of its fix: daemon #1 crashes between Reserve's fence of n1 (lent, drain,
// job 1 running) and the mark (preempt-after-fence: bit 16 of the crash draw). Slurm starts
// nothing on the fenced node; the restarted daemon, whose record knows no reservation, lifts the
// fence the mark never joined (n1 is still lent: the reconcile puts its Slurm side back) or
// reserves n1 again for ns/jupyter2, and every invariant holds through 12 healthy cycles after it
// ((d) would flag the fence left for a reservation nothing records).
TEST(KnownDefectsTest, D3_ACrashBetweenTheFenceAndTheMarkLeavesNoFenceWithoutAReason) {
  Scenario s{979, {"drain", {2, 0}, 0, 2},
             {{S::kInteractivePod, 57369}, {S::kPoll, 0}, {S::kCrashAt, 38664 | 0x10000}, {S::kInteractivePod, 15012},
              {S::kCycle, 21871}, {S::kJobFinishes, 54364}, {S::kSlurmSchedules, 45343}, {S::kRestart, 0}}};
  for (int i = 0; i < 12; ++i) s.steps.insert(s.steps.end(), {{S::kPoll, 0}, {S::kCycle, 0}});
  ExpectClean(s, AllBut({&KnownOpenDefects::d3, &KnownOpenDefects::d1}));
  EXPECT_NE(Checker(KnownOpenDefects::None()).Story(s).find("CRASH at preempt-after-fence"), std::string::npos);
}

// G3 (issue 25 step 4, found by the checker with the sub-node preemptors; seeds as the hunt found
// them, shrunk): a claimed room on a shared node is taken back before its claimant starts -> (g3).
// Every fault kind on, interactive and high work on s1 (c1's switch on), (g3) computed.
KnownOpenDefects G3Switches() { return KnownOpenDefects::None(); }

// Seed 252: ns/gpu3's placeholder runs on s1 (its record kPlaceholderRunning, the pod counted
// there, not bound yet); with slurmrestd hanging, one cycle binds it (BindMirrored) and, from the
// same plan, claims s1 for interactive ns/jupyter6 naming it as a victim -> (g3): the victim is
// placed on the claimed node after the claim. Fixed: a pod whose placeholder is under way is no
// victim until it is bound (SchedulingLoop::ReadWorld puts it in SnapshotOptions::claims).
TEST(KnownDefectsTest, G3_APodOnItsWayToASharedNodeIsNoVictimUntilItIsBound) {
  ExpectClean({252, {"placeholder", {1, 2, 1}, 0, 0, true, true},
               {{S::kSharedPodCreated, 48155}, {S::kSharedJobSubmitted, 27856}, {S::kInteractivePod, 41515},
                {S::kCrashAt, 45145}, {S::kCycle, 16869}, {S::kSuccessor, 5267}, {S::kSharedJobSubmitted, 48135},
                {S::kInteractivePod, 51190}, {S::kCycle, 13072}, {S::kSlurmSchedules, 12608},
                {S::kSlurmSchedules, 37611}, {S::kPoll, 0}, {S::kCycle, 63139}, {S::kSlurmSchedules, 53994},
                {S::kPoll, 44888}, {S::kInteractivePod, 4311}, {S::kSlurmHang, 17449}, {S::kCycle, 33543}}},
              G3Switches());
}

// Seed 483: high Slurm job 9 claims s1 and job 7 is requeued for it; the poll before had shown
// job 7 running, so no cycle holds it, and slurmrestd then hangs for good: 121 s after the requeue
// (its BeginTime) Slurm's own scheduler starts job 7 again on s1 while job 9 is held with its
// claim -> (g3) (the gap docs/sharing.md named). Fixed: a sub-node victim is held as soon as its
// requeue lands (PreemptionExecutor::AskSubNodeVictims); onequeue starts it when its plan does.
TEST(KnownDefectsTest, G3_ARequeuedVictimIsHeldSoSlurmDoesNotStartItIntoTheClaimedRoom) {
  ExpectClean({483, {"drain", {0, 1, 2, 2}, 1, 2, true},
               {{S::kPoll, 0}, {S::kCycle, 23048}, {S::kInteractivePod, 31473}, {S::kInteractivePod, 1961},
                {S::kJobSubmitted, 48857}, {S::kPodDeleted, 23043}, {S::kSharedJobSubmitted, 37049},
                {S::kJobFinishes, 14202}, {S::kInteractivePod, 21595}, {S::kPoll, 0}, {S::kSharedJobSubmitted, 28907},
                {S::kSrunJobSubmitted, 728}, {S::kCycle, 60213}, {S::kSharedPodCreated, 40565}, {S::kPoll, 0},
                {S::kCycle, 64431}, {S::kInteractivePod, 39139}, {S::kSharedJobSubmitted, 62201},
                {S::kJobFinishes, 26052}, {S::kPoll, 0}, {S::kCycle, 12719}, {S::kJobSubmitted, 4877}, {S::kPoll, 0},
                {S::kCycle, 236}, {S::kSharedPodCreated, 53961}, {S::kSlurmHang, 348}, {S::kCycle, 55449},
                {S::kCycle, 51304}, {S::kCycle, 29298}, {S::kCycle, 7758}, {S::kCycle, 16072}, {S::kCycle, 3641},
                {S::kCycle, 63931}, {S::kCycle, 56899}, {S::kCycle, 28436}, {S::kCycle, 59110},
                {S::kSlurmSchedules, 55094}}},
              G3Switches());
}

// Seed 523: interactive ns/jupyter7 claims s1 (its placeholder pending, naming slurm/4) and job 4
// is requeued; the daemon crashes, and the successor's first cycle with Slurm's view (which
// plans before PodMirrors::Rebuild reads the claim back) starts job 4 on s1 again -> (g3). Passes
// with the three rules above (which of them changes this run is not traced; a rule that starts
// nothing on a shared node in the cycle of the read-back broke two loop tests and was dropped).
TEST(KnownDefectsTest, G3_ASuccessorDoesNotStartAClaimsRequeuedVictimIntoTheClaimedRoom) {
  ExpectClean({523, {"placeholder", {1, 2, 0}, 0, 2, true},
               {{S::kPoll, 27654}, {S::kPodCreated, 22372}, {S::kCycle, 61600}, {S::kSlurmSchedules, 40547},
                {S::kPodCreated, 7992}, {S::kCycle, 60201}, {S::kCycle, 26088}, {S::kSharedPodCreated, 23310},
                {S::kCycle, 45992}, {S::kPoll, 0}, {S::kCycle, 59275}, {S::kCycle, 45715}, {S::kInteractivePod, 44984},
                {S::kPoll, 0}, {S::kCycle, 62644}, {S::kCycle, 19384}, {S::kCycle, 33707}, {S::kCycle, 21882},
                {S::kCycle, 53696}, {S::kSharedJobSubmitted, 7335}, {S::kInteractivePod, 45819}, {S::kCycle, 11041},
                {S::kCycle, 33758}, {S::kPlaceholderLost, 26371}, {S::kPoll, 0}, {S::kCycle, 55114},
                {S::kInteractivePod, 14477}, {S::kCycle, 17738}, {S::kCrash, 33281}, {S::kSharedPodCreated, 5930},
                {S::kSuccessor, 57687}, {S::kPoll, 0}, {S::kCycle, 49865}}},
              G3Switches());
}

// Seed 5086 (found once the three above were fixed): onequeue releases job 4 on s1 (an assumed
// start, not yet seen running); the next cycle's claim for interactive ns/jupyter5 names it as a
// victim, the requeue finds nothing running, and Slurm then starts job 4 into the room -> (g3).
// Fixed: a job released on a shared node and not yet seen running is no victim
// (AddSlurmWorld: assumed_starts of a sharing partition are not preemptible).
TEST(KnownDefectsTest, G3_AJobReleasedOnASharedNodeIsNoVictimUntilItIsSeenRunning) {
  ExpectClean({5086, {"drain", {0, 0, 1, 1}, 0, 2, true, true},
               {{S::kSharedJobSubmitted, 20395}, {S::kPoll, 0}, {S::kSlurmHang, 53413}, {S::kSharedPodCreated, 27753},
                {S::kCycle, 27601}, {S::kSharedJobSubmitted, 55775}, {S::kSharedJobSubmitted, 26730},
                {S::kSlurmUp, 15835}, {S::kPoll, 0}, {S::kCycle, 49501}, {S::kSharedPodCreated, 65057},
                {S::kPodDeleted, 47610}, {S::kJobFinishes, 39071}, {S::kSlurmSchedules, 11603}, {S::kPoll, 0},
                {S::kCycle, 52306}, {S::kInteractivePod, 6214}, {S::kPlaceholderLost, 10657}, {S::kCycle, 50718},
                {S::kSlurmSchedules, 62125}}},
              G3Switches());
}

// C1 (issue 25 step 4, found by the checker with the sub-node preemptors; g2 at seed 739, later
// 385 and 1638): slurmrestd hangs while daemon #2 submits the claim placeholder of high pod
// ns/gpu5-r on s1; it lands after 9 s, the call ends in kDeadlineExceeded, and the record was
// undone at once: the pending placeholder naming its victims stood in Slurm, the pod no longer
// counted as a claimant, and interactive ns/gpu10 evicted it as its victim -> (g2). Seed 385
// shrunk to 29 steps. Fixed: a timed-out submit is "maybe landed" (PodMirrors kSubmitUnknown): the
// claim stands until a listing taken after the call returned shows it (then kClaimed) or not
// (then undone).
TEST(KnownDefectsTest, C1_AClaimWhoseSubmitTimedOutStandsAndItsPodIsNoVictim) {
  ExpectClean({385, {"placeholder", {2, 0}, 0, 0, true, true},
               {{S::kPodCreated, 42186},      {S::kPodCreated, 57488},       {S::kSharedPodCreated, 24814},
                {S::kJobFinishes, 39490},     {S::kSharedPodCreated, 38894}, {S::kSharedPodCreated, 35576},
                {S::kJobSubmitted, 18946},    {S::kInteractivePod, 39633},   {S::kInteractivePod, 3975},
                {S::kJobSubmitted, 64846},    {S::kLoseLease, 14122},        {S::kPoll, 0},
                {S::kCycle, 52256},           {S::kPlaceholderLost, 17567},  {S::kCycle, 29127},
                {S::kSharedPodCreated, 9629}, {S::kSuccessor, 42998},        {S::kCycle, 32425},
                {S::kSlurmHang, 58052},       {S::kCycle, 56826},            {S::kCycle, 44570},
                {S::kZombieCycle, 33791},     {S::kSlurmUp, 36086},          {S::kInteractivePod, 2456},
                {S::kPoll, 0},                {S::kCycle, 24691},            {S::kCycle, 20296},
                {S::kSharedPodCreated, 3579}, {S::kCycle, 58244}}},
              AllBut({&KnownOpenDefects::c1}));
}

// C1, (b) (seeds 407 and 1862 before, 395 once the g2 half was fixed): n3 is reserved for high pod
// ns/gpu16; in one cycle of successor daemon #3 interactive ns/gpu13 (higher priority) takes n3
// from that reservation (fence and owner to kubernetes, bind), and the same cycle's plan reserves
// n3 again for ns/gpu16 (its victim ns/gpu15): the reservation stands while ns/gpu13's binding,
// which it never saw, lands -> (b). Seed 395 shrunk to 31 steps. Fixed: a node a start took from
// a reservation is not reserved again in the same cycle (SchedulingLoop::WholeNodePreemptions);
// the preemptor is planned again next cycle with ns/gpu13 on the node.
TEST(KnownDefectsTest, C1_ANodeTakenFromAReservationIsNotReservedAgainInTheSameCycle) {
  ExpectClean({395, {"drain", {0, 1, 1, 0}, 0, 1, true, true},
               {{S::kPodCreated, 14670},       {S::kSharedPodCreated, 36177}, {S::kSharedJobSubmitted, 25530},
                {S::kSharedPodCreated, 44503}, {S::kPodCreated, 58001},       {S::kPoll, 0},
                {S::kCycle, 31954},            {S::kInteractivePod, 44428},   {S::kCycle, 29472},
                {S::kInteractivePod, 33155},   {S::kCrash, 12125},            {S::kInteractivePod, 10264},
                {S::kJobFinishes, 27976},      {S::kSharedPodCreated, 38633}, {S::kInteractivePod, 64286},
                {S::kSharedPodCreated, 26552}, {S::kSharedPodCreated, 40229}, {S::kRestart, 58987},
                {S::kCycle, 24576},            {S::kCycle, 968},              {S::kSlurmHang, 42181},
                {S::kSharedPodCreated, 52203}, {S::kSharedPodCreated, 59807}, {S::kCycle, 26187},
                {S::kSharedPodCreated, 45128}, {S::kInteractivePod, 40790},   {S::kCycle, 30287},
                {S::kSlurmUp, 50714},          {S::kLoseLease, 30750},        {S::kSuccessor, 43730},
                {S::kCycle, 28123}}},
              AllBut({&KnownOpenDefects::c1}));
}

// D4 (found by the checker once worlds had a second shared node, issue 25 step 4; seed 2069 of the
// CI run, shrunk to 40 steps): daemon #2 fences and marks n2 reserved/ns/jupyter8 (victim: the
// Slurm job lent n2) and crashes at preempt-after-reserve, before asking it. Its successor reads
// the reservation back, but its plan puts jupyter8 on n3 (evicting a pod there) and then nowhere:
// n2 stayed reserved and fenced, the job running on it never asked, through the 60 s grace for
// unusable reservations -> (c) after 8 healthy cycles. Fixed: a reserved node whose victims this
// process never asked and where work still runs holds no room: it is released at once
// (PreemptionExecutor::ReleaseUnusable, Preemption::asked_on); the grace stays for nodes whose
// victims were asked.
TEST(KnownDefectsTest, D4_AReservationReadBackWhoseVictimsWereNeverAskedIsReleasedOnceItsPreemptorGoesElsewhere) {
  ExpectClean({2069, {"drain", {0, 2, 1}, 1, 2, true, true, true},
               {{S::kSharedPodCreated, 22810}, {S::kSharedCrashAt, 53460}, {S::kSharedPodGangCreated, 58008},
                {S::kPoll, 0}, {S::kCycle, 8700}, {S::kSharedGangJobSubmitted, 52825}, {S::kRestart, 58558},
                {S::kInteractivePod, 42138}, {S::kPoll, 0}, {S::kCycle, 46349}, {S::kSharedPodGangCreated, 6608},
                {S::kCrashAt, 3708}, {S::kSlurmSchedules, 65058}, {S::kSharedPodCreated, 55700},
                {S::kInteractivePod, 44125}, {S::kPodCreated, 51149}, {S::kInteractivePod, 44787},
                {S::kPodDeleted, 52321}, {S::kCycle, 59}, {S::kInteractivePod, 27462}, {S::kJobFinishes, 33879},
                {S::kRestart, 9212}, {S::kPlaceholderLost, 64795}, {S::kPoll, 0}, {S::kCycle, 11639},
                {S::kInteractivePod, 22886}, {S::kPoll, 0}, {S::kCycle, 53035}, {S::kPoll, 0}, {S::kCycle, 4214},
                {S::kPoll, 0}, {S::kCycle, 55902}, {S::kPoll, 0}, {S::kCycle, 30284}, {S::kPoll, 0},
                {S::kCycle, 60273}, {S::kPoll, 0}, {S::kCycle, 30732}, {S::kPoll, 0}, {S::kCycle, 61667}}},
              KnownOpenDefects::None());
}

// G4 (found by the checker's hunt once gangs of pods claimed on shared nodes; seed 6461, shrunk to
// 22 steps): gang9's two members claim s1 (their placeholders pending, naming slurm/5, which is
// requeued); one member is deleted and the daemon crashes; the successor reads the other
// member's claim back and yet starts job 5 on s1 again -> (g3).
TEST(KnownDefectsTest, G4_AGangMembersClaimReadBackKeepsItsVictimOff) {
  ExpectClean({6461, {"drain", {1, 2, 2, 1}, 1, 2, true, true, true},
               {{S::kSharedJobSubmitted, 14273}, {S::kPodDeleted, 17053}, {S::kPodCreated, 58888},
                {S::kPodCreated, 10301}, {S::kPodDeleted, 25201}, {S::kPoll, 0}, {S::kCycle, 49037},
                {S::kSharedPodCreated, 46910}, {S::kInteractivePod, 28848}, {S::kSlurmSchedules, 57386},
                {S::kSharedPodCreated, 53134}, {S::kCycle, 39976}, {S::kSharedPodGangCreated, 19312},
                {S::kPodDeleted, 32577}, {S::kPoll, 0}, {S::kCycle, 15401}, {S::kPodDeleted, 55656},
                {S::kCrash, 61244}, {S::kSlurmSchedules, 21655}, {S::kSuccessor, 29500}, {S::kPoll, 0},
                {S::kCycle, 30781}}},
              KnownOpenDefects::None());
}

// G5 (found by the checker's hunt with gangs of pods; seed 11351, shrunk to 31 steps): gang3's
// member claims s1 and its victim, high job 3, is requeued and held; Slurm starts job 5 (two
// nodes) into the room between polls, and job 3, planned beside the claim, claims room from job 5
// in turn. Job 5 leaves, but Slurm has meanwhile started job 6 (submitted between cycles, not yet
// held: the documented limit) on s1. Job 3's claim is ready (its victim gone) and onequeue released
// it: Slurm ran it, since its books do not hold the claim's pending placeholder, so the victim took
// the claimed room back -> (g3). Fixed: a ready job claim starts only when everything onequeue
// counts on its nodes fits there (sub_node_preemption.cc HoldsWhatItCounts); else it waits, held.
TEST(KnownDefectsTest, G5_AJobClaimWhoseRoomWasTakenMeanwhileIsNotStartedIntoAnotherClaimsRoom) {
  ExpectClean({11351, {"drain", {2, 0, 0}, 0, 1, true, true, true}, {{S::kInteractivePod, 54852}, {S::kCycle, 60863}, {S::kSharedJobSubmitted, 16109}, {S::kJobFinishes, 26358}, {S::kPoll, 0}, {S::kCycle, 62286}, {S::kSharedGangJobSubmitted, 41728}, {S::kSharedPodCreated, 57657}, {S::kPoll, 0}, {S::kCycle, 5393}, {S::kSlurmSchedules, 336}, {S::kSharedPodGangCreated, 537}, {S::kJobFinishes, 53082}, {S::kPodCreated, 53927}, {S::kJobFinishes, 6145}, {S::kSharedPodCreated, 49144}, {S::kPodCreated, 37618}, {S::kInteractivePod, 998}, {S::kInteractivePod, 18898}, {S::kSharedGangJobSubmitted, 47431}, {S::kSlurmSchedules, 65136}, {S::kInteractivePod, 13988}, {S::kCycle, 61809}, {S::kPodCreated, 52713}, {S::kPoll, 16263}, {S::kPodDeleted, 42659}, {S::kSharedJobSubmitted, 48598}, {S::kSlurmSchedules, 45695}, {S::kCycle, 34570}, {S::kPoll, 0}, {S::kCycle, 49578}}},
              KnownOpenDefects::None());
}

// F3 (found by the checker's hunt with a second shared node; seed 14983, shrunk to 64 steps): a
// bound pod's placeholder on s1 is cancelled by an admin; the re-made one never starts and the
// loss is reported (MirrorLost) 60 s later; then slurmctld loses the re-made one too. Another one
// is made, and never starts either, but the second loss was never reported: the record kept the
// first report's flag until the pod is mirrored again -> (f3). Fixed: every loss of a placeholder
// clears the flag (PodMirrors::Move on kPlaceholderLost), so each loss is reported once, as
// docs/sharing.md says.
TEST(KnownDefectsTest, F3_APlaceholderLostAgainBeforeItRanIsReportedAgain) {
  ExpectClean({14983, {"drain", {1, 2, 2}, 1, 1, true, false, true}, {{S::kInteractivePod, 53397}, {S::kSharedPodGangCreated, 1894}, {S::kInteractivePod, 34445}, {S::kSharedPodGangCreated, 32727}, {S::kPoll, 0}, {S::kCycle, 16308}, {S::kCrash, 36738}, {S::kSharedPodCreated, 51635}, {S::kJobFinishes, 64346}, {S::kInteractivePod, 39568}, {S::kSlurmSchedules, 40796}, {S::kPodDeleted, 41298}, {S::kRestart, 15625}, {S::kPoll, 0}, {S::kCycle, 59554}, {S::kPodDeleted, 55004}, {S::kCycle, 54170}, {S::kPlaceholderLost, 43137}, {S::kPoll, 0}, {S::kCycle, 32620}, {S::kSlurmHang, 9607}, {S::kCycle, 64046}, {S::kCycle, 28403}, {S::kSharedPodCreated, 36654}, {S::kInteractivePod, 17689}, {S::kCycle, 32344}, {S::kSlurmUp, 58934}, {S::kCycle, 7637}, {S::kPoll, 0}, {S::kCycle, 13202}, {S::kCycle, 19914}, {S::kPlaceholderLost, 58080}, {S::kPoll, 0}, {S::kCycle, 3147}, {S::kPoll, 0}, {S::kCycle, 19187}, {S::kPoll, 0}, {S::kCycle, 57805}, {S::kPoll, 0}, {S::kCycle, 59105}, {S::kPoll, 0}, {S::kCycle, 53524}, {S::kPoll, 0}, {S::kCycle, 63032}, {S::kPoll, 38696}, {S::kCycle, 11919}, {S::kPoll, 3631}, {S::kCycle, 310}, {S::kPoll, 0}, {S::kCycle, 15974}, {S::kPoll, 0}, {S::kCycle, 59155}, {S::kPoll, 0}, {S::kCycle, 6156}, {S::kPoll, 0}, {S::kCycle, 44422}, {S::kPoll, 0}, {S::kCycle, 59009}, {S::kPoll, 0}, {S::kCycle, 34919}, {S::kPoll, 0}, {S::kCycle, 29238}, {S::kPoll, 0}, {S::kCycle, 32276}}},
              KnownOpenDefects::None());
}

// G6 (found by the checker's hunt with gangs; seed 27025, shrunk to 40 steps): gang1's members
// claim s1 and s2, and job 6 (two nodes) is requeued for them; one member is deleted and its claim
// undone, the other's claim on s2 stands. The plan then starts job 6 again (it fits elsewhere by
// onequeue's count), onequeue releases it, and Slurm, whose books do not hold the pending claim
// placeholder and whose start onequeue does not pin, runs it on s1 and s2 -> (g3). Fixed: a job
// named as a victim by a claim that still stands is not started until that claim has run or been
// undone (SchedulingLoop::VictimOfAStandingClaim).
TEST(KnownDefectsTest, G6_AVictimOfAStandingClaimIsNotStartedBeforeTheClaimRuns) {
  ExpectClean({27025, {"placeholder", {2, 2, 0, 0}, 0, 1, true, true, true}, {{S::kSharedJobSubmitted, 40383}, {S::kSharedGangJobSubmitted, 63048}, {S::kPoll, 0}, {S::kCycle, 60735}, {S::kSharedGangJobSubmitted, 57774}, {S::kSharedJobSubmitted, 44234}, {S::kCrash, 22662}, {S::kSuccessor, 52986}, {S::kPoll, 0}, {S::kCycle, 32219}, {S::kSharedPodGangCreated, 42945}, {S::kPoll, 0}, {S::kCycle, 3955}, {S::kCycle, 58921}, {S::kCycle, 54320}, {S::kPodDeleted, 10840}, {S::kCycle, 20000}, {S::kCycle, 44796}, {S::kCycle, 58095}, {S::kCycle, 63848}, {S::kCycle, 57756}, {S::kCycle, 40508}, {S::kCycle, 2054}, {S::kCycle, 28197}, {S::kCycle, 15509}, {S::kCycle, 12378}, {S::kCycle, 58031}, {S::kCycle, 48626}, {S::kCycle, 31839}, {S::kCycle, 23136}, {S::kCycle, 25970}, {S::kCycle, 35056}, {S::kCycle, 64472}, {S::kCycle, 32274}, {S::kCycle, 53158}, {S::kPoll, 0}, {S::kCycle, 54987}, {S::kCycle, 53717}, {S::kCycle, 30676}, {S::kSlurmSchedules, 38832}}},
              KnownOpenDefects::None());
}

// D5 (found by the checker's hunt, seed 37645, shrunk to 30 steps): a world without shared
// nodes. slurmrestd hangs while daemon #1 starts job 1 on n2: the start lands after 9 s, the call
// ends in kDeadlineExceeded, and the loop took the start as failed (owner n2 back to kubernetes).
// Once slurmrestd answered, job 2 was started on n2 as well (its unfence let Slurm run job 1,
// released, there too), and a reservation of n2 for interactive ns/jupyter3 named job 2 only: job
// 1 was never asked -> (c) after 8 healthy cycles. Fixed: a start that timed out is unknown, not
// failed (as a pod placeholder's submit is, kSubmitUnknown): the node stays lent, the job counted
// there and the fence kept until a view listed after the call returned says whether it landed
// (SlurmLending::ConfirmStarts; not landed: the lend undone by UndoLend).
TEST(KnownDefectsTest, D5_AStartThatTimedOutButLandedIsNotTakenForFailed) {
  ExpectClean({37645, {"drain", {0, 0}, 1, 2}, {{S::kPoll, 0}, {S::kCycle, 26883}, {S::kCycle, 40612}, {S::kPodDeleted, 27156}, {S::kPodCreated, 46941}, {S::kSlurmHang, 37541}, {S::kCycle, 51261}, {S::kCycle, 41139}, {S::kCycle, 27517}, {S::kSlurmUp, 8830}, {S::kPoll, 0}, {S::kCycle, 39637}, {S::kInteractivePod, 58597}, {S::kCycle, 30855}, {S::kPoll, 18875}, {S::kCycle, 60244}, {S::kPoll, 0}, {S::kCycle, 42269}, {S::kPoll, 0}, {S::kCycle, 61021}, {S::kPoll, 0}, {S::kCycle, 24383}, {S::kPoll, 0}, {S::kCycle, 36221}, {S::kPoll, 0}, {S::kCycle, 13684}, {S::kPoll, 0}, {S::kCycle, 29690}, {S::kPoll, 0}, {S::kCycle, 14715}}},
              KnownOpenDefects::None());
}

// D6 (found by the checker's hunt from seed 37646 once D5 was fixed: seed 42779, shrunk to 24
// steps; failed the same on main before D5's fix): n3 is
// lent and onequeue starts job 2 there. Daemon #1 reserves n3 for interactive ns/jupyter7 (fence,
// mark) and crashes at reclaim-after-reserve, before job 2 is requeued. Its successor reads the
// reservation back (owner before unknown), plans jupyter7 on n1, and its fence of n1 fails: the
// preemption is rolled back (PreemptionExecutor::RollBack, ReleaseKind::kRolledBack), which writes
// n3's owner back to unmarked with no live check while job 2, never asked, runs there. The
// reconcile fences the unmarked node for kubernetes (drain: job 2 runs on), and the next daemon's
// reconcile marks it kubernetes from the poll alone (the gap docs/reliability.md "Not done yet"
// names) -> (a). Fixed: a rollback (ReleaseKind::kRolledBack) does not write unmarked on a node
// Slurm shares: it releases the node through the live check, as a finished reservation is
// (here: job 2 runs, so n3 is Slurm's), or keeps it reserved while the check cannot be done.
TEST(KnownDefectsTest, D6_ARolledBackReservationReadBackAfterACrashIsNotGivenToKubernetesUnderItsVictim) {
  ExpectClean({42779, {"drain", {1, 1, 2, 1}, 0, 0}, {{S::kFailWrites, 65288}, {S::kPodCreated, 46477}, {S::kInteractivePod, 14624}, {S::kCycle, 3651}, {S::kPodCreated, 61209}, {S::kPodDeleted, 45905}, {S::kPodDeleted, 37632}, {S::kJobSubmitted, 64237}, {S::kPodDeleted, 6899}, {S::kJobFinishes, 60145}, {S::kCycle, 48301}, {S::kPoll, 0}, {S::kCycle, 50531}, {S::kCrashAt, 25249}, {S::kInteractivePod, 42376}, {S::kCycle, 413}, {S::kFailWrites, 44970}, {S::kRestart, 25413}, {S::kPoll, 0}, {S::kCycle, 20301}, {S::kLoseLease, 24256}, {S::kSuccessor, 8260}, {S::kPoll, 0}, {S::kCycle, 9198}}},
              KnownOpenDefects::None());
}

// D6, a second path (the same hunt, from seed 42780: seed 57804, shrunk to 27 steps; also on main
// before D5's fix): daemon #1 lends n1 to srun job 3, reserves it for interactive ns/jupyter5 and
// crashes at preempt-after-reserve, before asking job 3. Its successor reads the reservation back;
// with slurmrestd hanging, its fence of n1 for the reservation lands but answers
// kDeadlineExceeded, the preemption is rolled back and n1 written unmarked; the reconcile fences it
// for kubernetes, and once Slurm answers the next cycle marks it kubernetes from the poll while job
// 3 runs there -> (a). Fixed as above: the live check's own fence times out too, so n1 stays
// reserved (its record kept) until the preemptor no longer waits; then it is released to Slurm.
TEST(KnownDefectsTest, D6_ARollbackAfterATimedOutFenceDoesNotGiveKubernetesANodeItsVictimRunsOn) {
  ExpectClean({57804, {"drain", {0, 2, 2}, 0, 0, true, false, true}, {{S::kPoll, 0}, {S::kCycle, 4675}, {S::kSrunJobSubmitted, 16419}, {S::kCycle, 60177}, {S::kCycle, 50034}, {S::kPoll, 40795}, {S::kCycle, 36166}, {S::kInteractivePod, 4590}, {S::kPodCreated, 45350}, {S::kPodCreated, 63294}, {S::kSharedPodCreated, 30014}, {S::kCycle, 16488}, {S::kCrashAt, 45906}, {S::kInteractivePod, 44153}, {S::kSharedPodCreated, 3877}, {S::kCycle, 24213}, {S::kJobFinishes, 47478}, {S::kRestart, 7181}, {S::kPoll, 2746}, {S::kSharedPodCreated, 13685}, {S::kSlurmHang, 32238}, {S::kCycle, 1434}, {S::kSlurmUp, 61117}, {S::kPodDeleted, 59508}, {S::kSharedGangJobSubmitted, 45721}, {S::kPoll, 51009}, {S::kCycle, 51269}}},
              KnownOpenDefects::None());
}

// G7 (found by the checker's hunt from seed 37646 once D5 was fixed: seed 64495, shrunk to 42
// steps; failed the same on main before D5's fix): interactive ns/gpu13 claims s1 and evicts high
// gang7's two pods there; their replacements (ns/gang7-0-r, -1-r) are mirrored on s2, claiming
// room there. Daemon #1 crashes (bind-after-send); its successor reads gpu13's claim back and asks
// its victims again: it evicted the replacements, which hold a claim of their own -> (g). Traced:
// a victim is a workload (ns/group/gang7), and the executor evicted every pod the snapshot counts
// in it, the replacements holding claims included. Fixed: such pods are never a victim's pods
// (WorkloadPods::never_victims, VictimPodKeys).
TEST(KnownDefectsTest, G7_ASuccessorAsksAClaimsVictimsAgainButNotTheirReplacements) {
  ExpectClean({64495, {"drain", {2, 1, 0, 2}, 1, 0, true, false, true}, {{S::kJobFinishes, 49962}, {S::kPodCreated, 32826}, {S::kPodDeleted, 20161}, {S::kPodCreated, 13564}, {S::kSharedJobSubmitted, 14338}, {S::kFailWrites, 32648}, {S::kPoll, 4945}, {S::kPodCreated, 49926}, {S::kSharedPodCreated, 61580}, {S::kCycle, 52552}, {S::kSharedPodGangCreated, 53820}, {S::kCycle, 56044}, {S::kSharedPodCreated, 21618}, {S::kPodDeleted, 13489}, {S::kSharedPodCreated, 7141}, {S::kSharedPodCreated, 23350}, {S::kPodDeleted, 35281}, {S::kCycle, 61690}, {S::kSlurmSchedules, 31170}, {S::kInteractivePod, 11019}, {S::kSlurmSchedules, 47744}, {S::kPoll, 0}, {S::kSharedPodCreated, 53376}, {S::kCycle, 22976}, {S::kPoll, 0}, {S::kCycle, 24999}, {S::kSharedPodCreated, 5568}, {S::kSharedGangJobSubmitted, 63430}, {S::kFailWrites, 6217}, {S::kSlurmSchedules, 18452}, {S::kInteractivePod, 47206}, {S::kPlaceholderLost, 27140}, {S::kPoll, 0}, {S::kCycle, 29796}, {S::kPodDeleted, 8560}, {S::kCycle, 23411}, {S::kSharedPodCreated, 27227}, {S::kSharedCrashAt, 3102}, {S::kCycle, 43122}, {S::kRestart, 19007}, {S::kPoll, 0}, {S::kCycle, 19971}}},
              KnownOpenDefects::None());
}

// G8 (found by the checker's hunt from seed 37646 once D5 was fixed: seed 70115, shrunk to 43
// steps; failed the same on main before D5's fix): interactive ns/gpu11 claims s1 (placeholder
// pending) and evicts ns/gpu7 there. Placeholders on s1 are lost or cancelled and Slurm jobs come
// and go; the plan puts gpu7's replacement ns/gpu7-r on s1 too (it fits beside the claim by
// onequeue's count), its placeholder submitted (SchedulingLoop::MirrorInsteadOfBinding); Slurm's
// own scheduler starts a job submitted between cycles there, then that placeholder while the
// claim's is still pending: gpu7-r is bound on s1 before the claimant started -> (g). Fixed: no
// placeholder is submitted on a node beside a standing claim there; the pod waits for the claim.
TEST(KnownDefectsTest, G8_APlaceholderBesideAStandingClaimDoesNotTakeTheClaimedRoom) {
  ExpectClean({70115, {"placeholder", {1, 2, 1}, 0, 0, true, true}, {{S::kSharedJobSubmitted, 19552}, {S::kSharedPodCreated, 5364}, {S::kSharedPodCreated, 24495}, {S::kInteractivePod, 62353}, {S::kSlurmSchedules, 693}, {S::kInteractivePod, 1719}, {S::kSharedPodCreated, 25879}, {S::kPoll, 0}, {S::kCycle, 5171}, {S::kInteractivePod, 36093}, {S::kSharedPodCreated, 55032}, {S::kPodCreated, 12210}, {S::kCycle, 51061}, {S::kPoll, 0}, {S::kCycle, 26573}, {S::kCycle, 14295}, {S::kCycle, 10957}, {S::kCycle, 30395}, {S::kSharedPodCreated, 34154}, {S::kCycle, 41668}, {S::kSlurmSchedules, 63265}, {S::kCycle, 45784}, {S::kCycle, 47351}, {S::kPoll, 0}, {S::kCycle, 64820}, {S::kCycle, 12210}, {S::kCycle, 53944}, {S::kCycle, 33998}, {S::kCycle, 16118}, {S::kPlaceholderLost, 11565}, {S::kPlaceholderLost, 38347}, {S::kPoll, 0}, {S::kCycle, 27088}, {S::kSharedJobSubmitted, 13385}, {S::kCycle, 60998}, {S::kPlaceholderLost, 42797}, {S::kSlurmSchedules, 32305}, {S::kSharedJobSubmitted, 35064}, {S::kSlurmSchedules, 18057}, {S::kJobFinishes, 47407}, {S::kSlurmSchedules, 58632}, {S::kPoll, 0}, {S::kCycle, 50943}}},
              KnownOpenDefects::None());
}

// D7 (found by the checker's hunt from seed 161727 on 2026-11-29, seed 178502, shrunk to 28 steps;
// failed the same on main before session 23, 29ed90b): n2 is lent, Slurm job 1 runs there. Between
// two polls job 1 completes and Slurm's own scheduler starts job 3 on n2. The next cycle, planning
// from the poll that still shows job 1, reserves n2 for interactive ns/jupyter3 with job 1 as its
// victim and fences n2 (drain); job 3, started before the drain, was nobody's victim: the record
// was under way, so the later plans that named job 3 were skipped, and eight healthy cycles later
// job 3 still ran on the reserved node -> (c). Fixed: a reservation under way asks the Slurm
// victims a later plan names on its own nodes (PreemptionExecutor::AskLateSlurmVictims).
TEST(KnownDefectsTest, D7_AJobSlurmStartedOnANodeJustBeforeItsReservationFenceIsAskedToLeave) {
  ExpectClean({178502, {"drain", {0, 2, 2}, 1, 0}, {{S::kFailWrites, 36770}, {S::kCycle, 17746}, {S::kCycle, 27779}, {S::kCycle, 64784}, {S::kPoll, 15586}, {S::kPodCreated, 41097}, {S::kCycle, 33508}, {S::kInteractivePod, 29623}, {S::kJobFinishes, 26736}, {S::kJobSubmitted, 17641}, {S::kSlurmSchedules, 3307}, {S::kCycle, 33823}, {S::kPoll, 0}, {S::kCycle, 36786}, {S::kPoll, 0}, {S::kCycle, 14717}, {S::kPoll, 0}, {S::kCycle, 27784}, {S::kPoll, 0}, {S::kCycle, 32895}, {S::kPoll, 0}, {S::kCycle, 63316}, {S::kPoll, 0}, {S::kCycle, 19284}, {S::kPoll, 0}, {S::kCycle, 433}, {S::kPoll, 0}, {S::kCycle, 35066}}},
              KnownOpenDefects::None());
}

}  // namespace
}  // namespace onequeue::scheduler
