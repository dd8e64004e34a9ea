// A class's answers, counted for the presenter (Note [A class's answers] in
// descent/lessons/terminal_class.py): each student's terminal, run with
// `descent lesson NAME --answers-to DIR`, writes one small file per question,
// DIR/LESSON/step-KK-q-N/STUDENT.txt, holding the choice's index from 0 (or
// the typed text). The app, run with --answers-from DIR, reads the same
// folder and shows under a waiting question how many picked each choice: the
// students' picks, never the answer. No ImGui (the tests call it directly).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace descent::ui {

struct ClassTally {
  bool found = false;                              // the question's folder exists (else no student has answered yet)
  int answers = 0;                                 // one per student: a student who answers again replaces their file
  std::vector<int> per_choice;                     // a choice question's count for each choice, by index
  std::vector<std::pair<std::string, int>> typed;  // a typed question's answers, the most given first
  int other = 0;       // a choice question's answers that name no choice (counted in `answers`)
  int unreadable = 0;  // files that could not be read, or empty
};

// What terminal_class.py's file_name makes of a lesson's or student's name:
// letters, digits and . _ - @ kept, anything else "_", no leading or
// trailing . or _, at most 80 characters.
std::string class_file_name(const std::string& text);

// The answers in `dir` to question `question` (from 0) of step `step` (from
// 0) of lesson `lesson`, which has `choices` choices (0: a typed answer).
// Each file is read up to 4 KiB; a folder that cannot be read counts nothing.
ClassTally tally_answers(const std::string& dir, const std::string& lesson, int step, int question, size_t choices);

}  // namespace descent::ui
