"""nbgrader's settings for a course on the study notebooks (TEACHING.md).

Copy this file into the course folder, the folder nbgrader runs in, and run nbgrader in the project's
environment: it imports isolib.
"""

from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import NbGraderPreprocessor

from isolib.student import for_students

c = get_config()  # noqa: F821 (nbgrader defines it when it reads this file)


class ForStudents(NbGraderPreprocessor):
    """What ``make student`` does before nbgrader's steps: the note on what to run first, no quick-run note or
    nbval's cell tags, ``output_dir`` beside the copy (isolib.student.for_students)."""

    def preprocess(self, nb, resources):
        return for_students(nb, resources["unique_key"]), resources


# generate_assignment releases the copies `make student` writes: the steps above, then nbgrader's own.
c.GenerateAssignment.preprocessors = [ForStudents, *GenerateAssignment.class_traits()["preprocessors"].default()]
# Each notebook computes its tables before its exercises, some cells for minutes: no limit per cell (nbgrader's
# default, 30 s, would stop them).
c.Execute.timeout = -1
