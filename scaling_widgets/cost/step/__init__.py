"""The step: its time with a utilisation given (the chapter's) or predicted term by term, the
pipeline's bubble and traffic, a schedule's timeline, the efficiency profiles and calibration."""
